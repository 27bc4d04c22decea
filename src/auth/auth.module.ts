import { Module } from '@nestjs/common';
import { PassportModule } from '@nestjs/passport';
import { TypeOrmModule } from '@nestjs/typeorm';
import { ApiTokenEntity } from './api-token.entity';
import { BearerStrategy } from './bearer-auth';
import { TokensService } from './tokens.service';

@Module({
  imports: [PassportModule.register({ session: false }), TypeOrmModule.forFeature([ApiTokenEntity])],
  providers: [TokensService, BearerStrategy],
  exports: [TokensService],
})
export class AuthModule {}
