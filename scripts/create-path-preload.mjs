// Loaded by scripts/create-path.mjs into the server (`--import`, before it): V8's precise
// coverage with call counts, reset and taken on the script's word over IPC.
import { Session } from 'node:inspector';
import { fileURLToPath } from 'node:url';

const session = new Session();
session.connect();
const post = (method, params) =>
  new Promise((resolve, reject) =>
    session.post(method, params, (error, result) => (error ? reject(error) : resolve(result))),
  );
const started = post('Profiler.enable').then(() => post('Profiler.startPreciseCoverage', { callCount: true }));

process.on('message', (command) => {
  void started
    .then(() => post('Profiler.takePreciseCoverage'))
    .then(({ result }) => {
      if (command === 'reset') return process.send('reset');
      const ran = result
        .filter((script) => script.url.startsWith('file://'))
        .filter((script) => script.functions.some((fn) => fn.ranges[0].count > 0))
        .map((script) => fileURLToPath(script.url));
      return process.send(ran);
    });
});
