import { Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { PassportModule } from '@nestjs/passport';
import { DataSource } from 'typeorm';
import { storeProvider } from '../database/store-provider';
import { BearerAuthGuard } from './bearer-auth.guard';
import { BearerStrategy } from './bearer.strategy';
import { PostgresTokenStore } from './stores/postgres-token.store';
import { SqliteTokenStore } from './stores/sqlite-token.store';
import { TOKEN_STORE, type TokenStore } from './token-store';
import { TokensService } from './tokens.service';

@Module({
  imports: [PassportModule.register({ session: false })],
  providers: [
    storeProvider<TokenStore>(TOKEN_STORE, { sqlite: SqliteTokenStore, postgres: PostgresTokenStore }),
    {
      provide: TokensService,
      inject: [DataSource],
      useFactory: (dataSource: DataSource) => new TokensService(dataSource),
    },
    BearerStrategy,
    { provide: APP_GUARD, useClass: BearerAuthGuard },
  ],
  exports: [TokensService],
})
export class AuthModule {}
