import { type Proxy, startProxy as startRecipeProxy } from '../../scripts/haproxy.mjs';
import { dyingWithTest } from './spawn';

export type { Proxy };

/** Debian's HAProxy running the recipe's file as written, in front of the instances at `a` and `b`. */
export function startProxy(a: number, b: number): Promise<Proxy> {
  return startRecipeProxy(a, b, { command: dyingWithTest });
}
