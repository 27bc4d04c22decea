/** For a whole test file: what `start` makes before its tests, `stop` undoes after; read it inside a test. */
export function fileScoped<T>(start: () => Promise<T>, stop: (made: T) => Promise<void>): () => T {
  let made: T | undefined;
  beforeAll(async () => {
    made = await start();
  });
  afterAll(async () => {
    if (made !== undefined) await stop(made);
  });
  return () => {
    if (made === undefined) throw new Error('read before the file has started');
    return made;
  };
}
