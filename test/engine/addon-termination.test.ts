// A recognition worker stopped while it is inside the addon (worker.terminate() when the pool
// closes, a test tears a service down) must not take the process with it. The addon reports
// errors as C++ exceptions turned into JavaScript ones; while a thread's environment is
// terminating that throw cannot happen, and node-addon-api then throws again from inside its
// own handler: std::terminate, "terminate called after throwing an instance of 'Napi::Error'",
// which killed whole vitest workers under load. binding.gyp defines
// NODE_API_SWALLOW_UNTHROWABLE_EXCEPTIONS so such an exception is dropped with the thread.
// Without it this test's child process aborts (exit 134) within a few dozen workers.
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { addonFile } from '../../src/engine/native.js';

// Each worker throws from the addon in a loop (a wrong argument to a resampler: no model needed)
// and is terminated a few ms after it starts, so termination lands inside a throwing call.
const PARENT = `
const { Worker } = require('node:worker_threads');
const WORKER = \`
  const { parentPort } = require('node:worker_threads');
  const addon = require(process.env.ADDON);
  const r = new addon.Resampler(8000, 16000);
  parentPort.postMessage('go');
  for (;;) { try { r.process('not samples'); } catch {} }
\`;
let n = 0;
function one() {
  const w = new Worker(WORKER, { eval: true });
  w.once('message', () => setTimeout(() => w.terminate().then(() => (++n < 60 ? one() : console.log('survived', n))), Math.random() * 5));
}
one();
`;

describe('the native addon in a terminated worker', () => {
  it('lets the worker go without aborting the process', () => {
    const run = spawnSync(process.execPath, ['-e', PARENT], {
      env: { ...process.env, ADDON: addonFile() },
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(run.stderr).not.toContain('terminate called');
    expect(run.status).toBe(0);
    expect(run.stdout).toContain('survived 60');
  }, 70_000);
});
