// An exclusive lock on a data directory, so two `scribed serve` processes never share one. Take
// it before anything in the data dir is touched; keep the returned object for the life of the
// process (release() is for orderly shutdown and tests).
//
// How: a kernel flock(2) lock on `<dataDir>/scribed.lock`, held on a file descriptor this process
// keeps open. Node has no flock binding, so the lock is taken by util-linux's flock(1) (Essential
// in Debian, always present) on a *shared* descriptor: we open the file, hand that descriptor to
// `flock -n -x 3` as its fd 3, and flock(1) locks it and exits. A flock lock belongs to the open
// file description, not to the process that called flock(2), so it stays held by our descriptor
// after the helper exits, until we close it or die. That gives:
//   - kill -9, OOM kill, crash, power loss: the kernel closes our descriptors and the lock is gone.
//     No stale lock file to judge, no pid reuse, boot ids or start times to compare.
//   - two processes starting at the same instant: the kernel grants the lock to exactly one.
//   - same process, twice: each acquire opens its own file description, and flock locks on two
//     descriptions conflict even within one process, so the second acquire fails too.
//   - children we spawn (ffmpeg, ...) do not inherit it: Node opens files O_CLOEXEC.
// The file's content (the holder's pid and host) is only for the error message; it is written
// after the lock is taken and cleared on release. The file itself is never deleted: deleting it
// would let a process that opened the old inode and one that created a new one both "hold" it.
//
// Rejected: a pid file created with O_EXCL and taken over when stale. A takeover is a
// read-judge-replace sequence, and making two racers for one stale file agree needs a second
// lock with its own staleness problem; pid liveness also misjudges pid namespaces and shared
// volumes. `proper-lockfile` (mkdir + mtime refreshed by a timer, stale after N seconds) does not
// survive kill -9 cleanly either: a restart must wait out the stale period, and a busy event loop
// or a clock jump past it lets a second server steal the lock from a live one.
//
// Limits: advisory (only processes that ask are excluded); Linux flock on NFS is emulated with
// byte-range locks, which works with lock-capable NFS servers but not on every network filesystem.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export const DATA_DIR_LOCK_FILE = 'scribed.lock';

export interface DataDirLock {
  /** Drop the lock (idempotent). Exiting the process, however it exits, drops it too. */
  release(): void;
  /** The lock file, `<dataDir>/scribed.lock`. */
  readonly file: string;
}

/** flock(1) exit status on conflict (set with -E; its default 1 is also its usage-error status). */
const CONFLICT_EXIT = 100;

interface Holder {
  pid?: number;
  host?: string;
}

function readHolder(fd: number): Holder {
  try {
    const buf = Buffer.alloc(4096);
    const n = fs.readSync(fd, buf, 0, buf.length, 0);
    const parsed = JSON.parse(buf.subarray(0, n).toString('utf8')) as Holder;
    return { pid: Number.isInteger(parsed.pid) ? parsed.pid : undefined, host: typeof parsed.host === 'string' ? parsed.host : undefined };
  } catch {
    return {}; // empty (holder not yet written, or released) or unreadable: pid unknown
  }
}

export function acquireDataDirLock(dataDir: string): DataDirLock {
  const dir = path.resolve(dataDir);
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const file = path.join(dir, DATA_DIR_LOCK_FILE);
  // No O_TRUNC: the file may hold a live holder's pid. O_NOFOLLOW: never lock a symlink's target.
  const fd = fs.openSync(file, fs.constants.O_RDWR | fs.constants.O_CREAT | fs.constants.O_NOFOLLOW, 0o600);
  try {
    const r = spawnSync('flock', ['--nonblock', '--exclusive', '--conflict-exit-code', String(CONFLICT_EXIT), '3'], {
      stdio: ['ignore', 'ignore', 'pipe', fd],
      timeout: 30_000,
      encoding: 'utf8',
    });
    if (r.error) {
      const missing = (r.error as NodeJS.ErrnoException).code === 'ENOENT';
      throw new Error(
        missing
          ? `cannot lock data directory ${dir}: flock(1) not found (install util-linux)`
          : `cannot lock data directory ${dir}: ${r.error.message}`,
      );
    }
    if (r.status === CONFLICT_EXIT) {
      const holder = readHolder(fd);
      const who =
        holder.pid === undefined
          ? ''
          : holder.host && holder.host !== os.hostname()
            ? ` (pid ${holder.pid} on ${holder.host})`
            : ` (pid ${holder.pid})`;
      throw new Error(`data directory ${dir} is in use by another scribed process${who}; stop it first or use another --data-dir`);
    }
    if (r.status !== 0) {
      throw new Error(`cannot lock data directory ${dir}: flock exited with ${r.status ?? r.signal}: ${(r.stderr ?? '').trim()}`);
    }
    // Locked. Record who holds it, for the message another starter gets.
    const info = Buffer.from(`${JSON.stringify({ pid: process.pid, host: os.hostname(), since: new Date().toISOString() })}\n`);
    fs.ftruncateSync(fd, 0);
    fs.writeSync(fd, info, 0, info.length, 0);
  } catch (err) {
    fs.closeSync(fd);
    throw err;
  }

  let held = true;
  return {
    file,
    release() {
      if (!held) return;
      held = false;
      try {
        fs.ftruncateSync(fd, 0); // still ours: nobody else can be writing it
      } finally {
        fs.closeSync(fd); // drops the lock
      }
    },
  };
}
