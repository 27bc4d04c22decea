import { DatabaseError } from 'pg';
import { isTransportFailure, postgresFailure } from './postgres';
import { StoreUnavailableError } from './store-unavailable.error';

function serverError(code: string): DatabaseError {
  const error = new DatabaseError('from the server', 0, 'error');
  error.code = code;
  return error;
}

function systemError(code: string): Error {
  return Object.assign(new Error(`write ${code}`), { code, syscall: 'write' });
}

describe('postgresFailure', () => {
  it.each(['57014', '55P03', '40P01', '08006', '53300', '57P01'])('turns SQLSTATE %s into unavailability', (code) => {
    expect(postgresFailure(serverError(code))).toBeInstanceOf(StoreUnavailableError);
    expect(isTransportFailure(serverError(code))).toBe(false);
  });

  it.each(['23505', 'P0001', '42P01'])('passes SQLSTATE %s through as the error it is', (code) => {
    const error = serverError(code);
    expect(postgresFailure(error)).toBe(error);
  });

  // EPIPE has the shape of a SQLSTATE (five capitals): a pooler that went away once answered
  // a create 500 because of it.
  it.each(['EPIPE', 'ECONNRESET', 'ECONNREFUSED', 'ETIMEDOUT'])(
    'turns a connection failure (%s) into unavailability, and discards the connection',
    (code) => {
      expect(postgresFailure(systemError(code))).toBeInstanceOf(StoreUnavailableError);
      expect(isTransportFailure(systemError(code))).toBe(true);
    },
  );

  it('turns an error without a code (a terminated connection) into unavailability', () => {
    expect(postgresFailure(new Error('Connection terminated unexpectedly'))).toBeInstanceOf(StoreUnavailableError);
  });
});
