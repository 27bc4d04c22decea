import { Injectable } from '@nestjs/common';
import { PassportStrategy } from '@nestjs/passport';
import type { Request } from 'express';
import { Strategy } from 'passport-http-bearer';
import { TokensService } from './tokens.service';

export interface AuthenticatedClient {
  tokenName: string;
}

/**
 * `passport-http-bearer` on our token store. The strategy also looks for `access_token` in the
 * query string and the body; the contract allows the header only, so it is shown a request
 * that has nothing but the Authorization header.
 */
@Injectable()
export class BearerStrategy extends PassportStrategy(Strategy, 'bearer') {
  constructor(private readonly tokens: TokensService) {
    super();
  }

  async validate(token: string): Promise<AuthenticatedClient | false> {
    const tokenName = await this.tokens.verify(token);
    return tokenName === null ? false : { tokenName };
  }

  override authenticate(req: Request, options?: object): void {
    const headerOnly = { headers: { authorization: req.headers.authorization } } as Request;
    super.authenticate(headerOnly, options);
  }
}
