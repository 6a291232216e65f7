// The WAL checkpointer's thread (see wal-checkpointer.ts): its own connection to the store's
// file, checkpointing when asked, so the writes and syncs of a checkpoint never hold the
// server's event loop.
import Database from 'better-sqlite3';
import { parentPort, workerData } from 'node:worker_threads';

export interface CheckpointerData {
  file: string;
  busyTimeoutMs: number;
}
export type CheckpointerRequest = { type: 'checkpoint' } | { type: 'close' };
export type CheckpointerReply =
  { type: 'checkpointed'; walFrames: number; checkpointed: number } | { type: 'failed'; message: string } | { type: 'closed' };

const { file, busyTimeoutMs } = workerData as CheckpointerData;
const db = new Database(file, { timeout: busyTimeoutMs, fileMustExist: true });
// This connection never checkpoints on its own commits (it makes none) nor on close: the
// server's connection, closing last, does the final one.
db.pragma('wal_autocheckpoint = 0');

function reply(r: CheckpointerReply): void {
  parentPort!.postMessage(r);
}

parentPort!.on('message', (msg: CheckpointerRequest) => {
  if (msg.type === 'close') {
    db.close();
    reply({ type: 'closed' });
    parentPort!.close();
    return;
  }
  try {
    // PASSIVE: copy what no reader still needs, without waiting for readers or writers; the
    // rest goes at the next one.
    const [row] = db.pragma('wal_checkpoint(PASSIVE)') as Array<{ busy: number; log: number; checkpointed: number }>;
    reply({ type: 'checkpointed', walFrames: row?.log ?? 0, checkpointed: row?.checkpointed ?? 0 });
  } catch (err) {
    reply({ type: 'failed', message: (err as Error).message });
  }
});
