// Draining a node before it stops (SIGTERM; docs/operations.md "Draining a node"): the node
// takes no new socket or resume, tells the balancer so (/readyz 503 "draining", the agent
// check `drain`), and moves its live calls to other nodes without cutting an utterance:
//
// - Each stream socket whose client speaks scribed's protocol (scribed stream, rtp, gateway:
//   SessionSocket.canResume) is sent a `reconnect` event at the session's next segment
//   boundary: right after its next final, once the spool holds that final's cut and channel
//   state, or at once when no segment is open. The client resumes through the balancer on
//   another node, opens its new socket, then lets this one go (make-before-break); the resume
//   fences this node off, and the new node replays from the shared spool the little audio
//   acknowledged since the final (the start of the next utterance), as any takeover does.
//   Why at a boundary rather than at once with the open segment carried over: a takeover in
//   vad mode judges the replayed audio with a fresh detector, which can move a segment edge
//   (docs/scaling.md); a segment that ended here leaves nothing for it to judge but the next
//   utterance's first moments. A session whose boundary does not come within the boundary
//   wait (a manual-mode call with no commit: its segment bound is 30 s) is told anyway: its
//   open segment goes over in the spool and is finished by the new node.
// - A session whose client has sent `close` is not told: its client waits for `closed` on
//   that socket and would not move (src/client/session-streamer.ts), so the close is carried
//   out here, within the grace (a loaded node may need a while to decode the call's end).
// - Once the client has resumed elsewhere, this node lets the session go at once: the resume
//   fences it, and the first fenced write or lease renewal (a third of the lease) ends it
//   without waiting for the frames and decoding queued before (LiveSession.movedOn; the
//   decoder's backlog is dropped, not decoded: the new owner replays the spool).
// - Sockets that cannot resume (the Deepgram and OpenAI facades) are kept until they close.
// - On the embedded store (one node) there is nowhere to move to: no drain, SIGTERM stops at
//   once as before (open segments finalized with trigger `shutdown`, close 1012, clients
//   resume after the restart).
// The drain ends when no session of the node has a socket, when the grace ends, or when it
// is cut short (a second SIGTERM); the service then stops as before (what is left is
// finalized with trigger `shutdown` and closed with 1012).
import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';
import { serverEvent, type ServerEvent } from '../core/protocol.js';
import type { LiveSession } from '../session/live-session.js';
import type { SessionRegistry } from '../session/registry.js';

export interface DrainOptions {
  sessions: () => SessionRegistry;
  log: Logger;
  /** The longest the drain waits for calls to move or end. */
  graceMs: number;
  /** How long a session waits for its segment boundary before it is told to move anyway. */
  boundaryWaitMs: number;
  /** Before the first `reconnect`: time for the balancer to take the node out, so a resume
   * reaches another node at its first try (the reference HAProxy: fall 2 x inter 1 s). */
  noticeMs: number;
  /** How often the drain looks at its sessions. */
  pollMs?: number;
}

/** How a drain ended: no call left, the grace ran out, cut short, or no drain at all (the
 * embedded store, or a grace of 0). */
export type DrainEnd = 'empty' | 'grace' | 'cut' | 'off';

/** The file a drain leaves in the data dir: the next process on it tells the agent check
 * `ready`, undoing the `drain` HAProxy keeps for the server (src/core/agent-check.ts). */
export const DRAINED_MARKER = 'drained';

export class NodeDrain {
  private started: { at: number; noticeAt: number; deadline: number; done: Promise<DrainEnd> } | null = null;
  /** Sessions told to move, by id, with when. */
  private readonly told = new Map<string, number>();
  /** Sessions whose segment boundary came (a final): told once their spool is stored. */
  private readonly atBoundary = new Set<string>();
  private cut: (() => void) | null = null;

  constructor(private readonly opts: DrainOptions) {}

  get draining(): boolean {
    return this.started !== null;
  }

  /** Start draining (idempotent); resolves once the drain is over, and why. */
  start(): Promise<DrainEnd> {
    if (this.started) return this.started.done;
    const at = Date.now();
    const deadline = at + this.opts.graceMs;
    const noticeAt = at + this.opts.noticeMs;
    let cut!: () => void;
    const cutShort = new Promise<'cut'>((resolve) => (cut = () => resolve('cut')));
    this.cut = cut;
    this.started = { at, noticeAt, deadline, done: Promise.resolve<DrainEnd>('empty') };
    const done = this.run(noticeAt, deadline, cutShort);
    this.started.done = done;
    const live = this.opts
      .sessions()
      .all()
      .filter((s) => s.hasSocket).length;
    this.opts.log.info(
      { graceMs: this.opts.graceMs, liveSockets: live },
      'draining: no new sockets; live calls move to other nodes or end',
    );
    return done;
  }

  /** End the drain now (a second SIGTERM): the stop that follows loses nothing stored. */
  cutShort(): void {
    this.cut?.();
  }

  /** LiveSessionDeps.observeEvent: a final is the session's segment boundary. */
  observe(sessionId: string, event: ServerEvent): void {
    // A final before the notice ends is no boundary to move at later: the next utterance
    // may have begun by then.
    if (this.started && Date.now() >= this.started.noticeAt && event.type === 'final' && !this.told.has(sessionId))
      this.atBoundary.add(sessionId);
  }

  private async run(noticeAt: number, deadline: number, cutShort: Promise<'cut'>): Promise<DrainEnd> {
    const pollMs = this.opts.pollMs ?? 100;
    for (;;) {
      const now = Date.now();
      const sessions = this.opts.sessions().all();
      if (!sessions.some((s) => s.hasSocket)) return await this.ended('empty');
      if (now >= deadline) return await this.ended('grace');
      if (now >= noticeAt) for (const s of sessions) this.consider(s, now, deadline);
      const tick = new Promise<null>((resolve) => setTimeout(() => resolve(null), Math.min(pollMs, Math.max(1, deadline - now))).unref());
      if ((await Promise.race([tick, cutShort])) === 'cut') return await this.ended('cut');
    }
  }

  private consider(s: LiveSession, now: number, deadline: number): void {
    if (this.told.has(s.id) || !s.hasSocket || !s.socketCanResume || s.closeRequested) return;
    const waited = now - (this.started?.at ?? now) - this.opts.noticeMs;
    const boundary = this.atBoundary.has(s.id) || s.openSegmentSamples === 0;
    if (!boundary && waited < this.opts.boundaryWaitMs) return;
    this.told.set(s.id, now);
    this.atBoundary.delete(s.id);
    void s
      .whenStored()
      .catch(() => undefined)
      .then(() => {
        const at = Date.now();
        const sent = s.tellSocket(
          serverEvent.reconnect({
            reason: 'NODE_DRAINING',
            withinMs: Math.max(0, deadline - at),
            deadline: new Date(deadline).toISOString(),
          }),
        );
        if (sent)
          this.opts.log.info(
            { sessionId: s.id, atBoundary: boundary, openSamples: s.openSegmentSamples },
            'draining: session told to reconnect elsewhere',
          );
      });
  }

  private async ended(how: DrainEnd): Promise<DrainEnd> {
    // Sessions told to move whose socket has gone: their client resumed elsewhere (or will),
    // so they leave without finalizing (the stop would otherwise decode and finalize their
    // open segment here, in vain: the resume fenced this node off). The spool has their audio.
    const moved = this.opts
      .sessions()
      .all()
      .filter((s) => this.told.has(s.id) && !s.hasSocket);
    await Promise.allSettled(moved.map((s) => s.movedOn('drained: the client moved to another node')));
    const left = this.opts
      .sessions()
      .all()
      .filter((s) => s.hasSocket).length;
    const ms = Date.now() - (this.started?.at ?? Date.now());
    this.opts.log.info(
      { how, ms, socketsLeft: left, told: this.told.size },
      how === 'empty'
        ? 'drained: no live call left'
        : how === 'grace'
          ? 'drain grace over; stopping with the calls left'
          : 'drain cut short; stopping',
    );
    return how;
  }
}

/** Leave the marker (best effort: without it the next process's agent says no `ready`). */
export function markDrained(dataDir: string, log: Logger): void {
  try {
    fs.writeFileSync(path.join(dataDir, DRAINED_MARKER), `${new Date().toISOString()}\n`);
  } catch (err) {
    log.warn({ err }, 'could not leave the drained marker; after the restart, `set server ... state ready` in HAProxy by hand');
  }
}

/** For the agent check of a process starting on `dataDir`: true for its first `answers`
 * answers when the previous process drained (then the marker is removed), false otherwise.
 * Several answers, not one: a check HAProxy gave up on (its timeout) would lose the word. */
export function readyAgainAfterDrain(dataDir: string, answers = 3): () => boolean {
  const file = path.join(dataDir, DRAINED_MARKER);
  let left = fs.existsSync(file) ? answers : 0;
  return () => {
    if (left <= 0) return false;
    left -= 1;
    if (left === 0) fs.rmSync(file, { force: true });
    return true;
  };
}
