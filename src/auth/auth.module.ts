import { Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { PassportModule } from '@nestjs/passport';
import { storeProvider } from '../database/store-provider';
import { BearerAuthGuard } from './bearer-auth.guard';
import { BearerStrategy } from './bearer.strategy';
import { PostgresTokenStore } from './stores/postgres-token.store';
import { SqliteTokenStore } from './stores/sqlite-token.store';
import { TokenStore } from './token-store';

@Module({
  imports: [PassportModule.register({ session: false })],
  providers: [
    storeProvider(TokenStore, { sqlite: SqliteTokenStore, postgres: PostgresTokenStore }),
    BearerStrategy,
    { provide: APP_GUARD, useClass: BearerAuthGuard },
  ],
})
export class AuthModule {}
