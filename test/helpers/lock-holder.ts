// Child process for test/store/data-dir-lock.test.ts:
//   node --import tsx test/helpers/lock-holder.ts <dataDir> [--wait-go]
// Prints `ready` (with --wait-go, then waits for a `go` line on stdin), tries the data-dir lock
// and prints one JSON line: {"ok":true,"pid":N} (then holds the lock until killed) or
// {"ok":false,"message":"..."} (then exits).
import readline from 'node:readline';
import { acquireDataDirLock } from '../../src/store/data-dir-lock.js';

const [dataDir, flag] = process.argv.slice(2);

function attempt(): void {
  try {
    acquireDataDirLock(dataDir!);
    process.stdout.write(`${JSON.stringify({ ok: true, pid: process.pid })}\n`);
    setInterval(() => {}, 1 << 30); // hold it until killed
  } catch (err) {
    process.stdout.write(`${JSON.stringify({ ok: false, message: (err as Error).message })}\n`);
    process.exit(0);
  }
}

if (flag === '--wait-go') {
  const rl = readline.createInterface({ input: process.stdin });
  rl.on('line', (line) => {
    if (line === 'go') {
      rl.close();
      attempt();
    }
  });
  process.stdout.write('ready\n');
} else {
  attempt();
}
