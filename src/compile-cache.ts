import { enableCompileCache } from 'node:module';

/**
 * Every entry point imports this second, after the Node version check and before the
 * libraries: Node then keeps the V8 bytecode of each module it compiles on disk and reuses it
 * next time, so a restart, a replaced worker or an operator command compiles Nest, TypeORM and
 * the rest only once (see docs/performance-log.md). The cache is Node's own: in the system's
 * temporary folder, or where NODE_COMPILE_CACHE says; where it cannot be written, Node carries
 * on without it.
 */
enableCompileCache();
