import { Module } from '@nestjs/common';
import { PassportModule } from '@nestjs/passport';
import { storeProvider } from '../database/store-provider';
import { BearerStrategy } from './bearer-auth';
import { TOKEN_STORES } from './stores/token-stores';
import { TokenStore } from './token-store';

/**
 * The `bearer` passport strategy on the token store. The guard that uses it is registered
 * globally by AppModule (BearerAuthGuard, or its stand-in from the fast-path cage).
 */
@Module({
  imports: [PassportModule.register({ session: false })],
  providers: [storeProvider(TokenStore, TOKEN_STORES), BearerStrategy],
})
export class AuthModule {}
