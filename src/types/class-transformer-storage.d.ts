/**
 * class-transformer keeps what its decorators say of each class in this module, which its
 * package index does not export; Nest's own `@nestjs/mapped-types` reads it from here too.
 */
declare module 'class-transformer/cjs/storage' {
  export { defaultMetadataStorage } from 'class-transformer/types/storage';
}
