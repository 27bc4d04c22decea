// Jest orders test files by how long each took last time, longest first, and without that
// record (a fresh clone, CI) by file size. Some short files are among the longest to run: they
// wait out the server's fixed deadlines (the 30 s response deadline, the 10 s idle and header
// timeouts) or start many processes, and run last, one of them would finish long after the
// rest. So a file whose docblock says `@slow N s: why` (N: about how long it takes) goes first,
// the longest of those first, whatever jest knows of it.
import { readFileSync } from 'node:fs';
import Sequencer from '@jest/test-sequencer';
import { extract, parse } from 'jest-docblock';

/** The seconds a file says it takes, or 0 if it does not say. */
function slowSeconds(path) {
  const slow = parse(extract(readFileSync(path, 'utf8'))).slow;
  return typeof slow === 'string' ? Number.parseFloat(slow) || 0 : 0;
}

export default class SlowFirst extends Sequencer {
  async sort(tests) {
    const ordered = await super.sort(tests);
    const seconds = new Map(ordered.map((test) => [test, slowSeconds(test.path)]));
    // Array.prototype.sort is stable: files that do not say keep jest's order.
    return [...ordered].sort((a, b) => seconds.get(b) - seconds.get(a));
  }
}
