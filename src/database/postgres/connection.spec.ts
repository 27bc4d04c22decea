import { DatabaseError } from 'pg';
import { postgresFailure } from './connection';
import { StoreUnavailableError } from '../../errors/api-error';

function serverError(code: string): DatabaseError {
  const error = new DatabaseError('from the server', 0, 'error');
  error.code = code;
  return error;
}

function systemError(code: string): Error {
  return Object.assign(new Error(`write ${code}`), { code, syscall: 'write' });
}

describe('postgresFailure', () => {
  it.each([
    ['57014', 'our statement_timeout'],
    ['55P03', 'a lock wait past lock_timeout'],
    ['40P01', 'a deadlock'],
    ['08006', 'a connection failure'],
    ['53300', 'too many connections'],
    ['53100', 'a full disk'],
    ['57P01', 'an administrator shutdown'],
    ['25006', 'a read-only transaction (a standby)'],
    ['42501', 'insufficient privilege'],
    ['42P01', 'a missing table'],
    ['42703', 'a missing column'],
    ['3D000', 'a missing database'],
    ['28P01', 'a rejected password'],
    ['XX001', 'corrupt data'],
  ])('turns SQLSTATE %s (%s) into unavailability', (code) => {
    expect(postgresFailure(serverError(code))).toBeInstanceOf(StoreUnavailableError);
  });

  it.each(['23505', '23502', 'P0001', '42601', '22P02'])(
    'passes SQLSTATE %s (a bug of ours) through as the error it is',
    (code) => {
      const error = serverError(code);
      expect(postgresFailure(error)).toBe(error);
    },
  );

  // EPIPE has the shape of a SQLSTATE (five capitals): a pooler that went away once answered
  // a create 500 because of it.
  it.each(['EPIPE', 'ECONNRESET', 'ECONNREFUSED', 'ETIMEDOUT'])(
    'turns a connection failure (%s) into unavailability',
    (code) => {
      expect(postgresFailure(systemError(code))).toBeInstanceOf(StoreUnavailableError);
    },
  );

  it('turns an error without a code (a terminated connection, a query with no answer in time) into unavailability', () => {
    expect(postgresFailure(new Error('Connection terminated unexpectedly'))).toBeInstanceOf(StoreUnavailableError);
    expect(postgresFailure(new Error('Query read timeout'))).toBeInstanceOf(StoreUnavailableError);
  });
});
