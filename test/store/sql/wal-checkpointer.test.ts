// The checkpoint thread's failure path: a thread that cannot open the file reports it, so the
// server's connection goes back to checkpointing inline instead of growing its WAL forever.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { WalCheckpointer } from '../../../src/store/sql/wal-checkpointer.js';

describe('WalCheckpointer', () => {
  it('reports a thread that cannot start, and checkpoints nothing when nothing was written', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'scribed-checkpointer-'));
    try {
      const failures: string[] = [];
      const idle = new WalCheckpointer({ file: path.join(dir, 'none.db'), busyTimeoutMs: 100 }, 20, (r) => failures.push(r));
      await new Promise((r) => setTimeout(r, 100));
      expect(failures).toEqual([]); // no write, no thread, no failure
      await idle.close();

      const broken = new WalCheckpointer({ file: path.join(dir, 'missing.db'), busyTimeoutMs: 100 }, 20, (r) => failures.push(r));
      broken.wrote();
      await expect.poll(() => failures.length, { timeout: 10_000 }).toBe(1);
      expect(failures[0]).toMatch(/WAL checkpoint thread/);
      expect(broken.completed).toBe(0);
      await broken.close();
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
