import { Module } from '@nestjs/common';
import { PassportModule } from '@nestjs/passport';
import { storeProvider } from '../database/database.module';
import { BearerStrategy } from './bearer-auth';
import { TOKEN_STORES, TokenStore } from './token-store';

@Module({
  imports: [PassportModule.register({ session: false })],
  providers: [storeProvider(TokenStore, TOKEN_STORES), BearerStrategy],
})
export class AuthModule {}
