import { Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { PassportModule } from '@nestjs/passport';
import { DataSource } from 'typeorm';
import { BearerAuthGuard } from './bearer-auth.guard';
import { BearerStrategy } from './bearer.strategy';
import { TokensService } from './tokens.service';

@Module({
  imports: [PassportModule.register({ session: false })],
  providers: [
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
