// The live sessions this node serves. A session is claimed for this node (a lease in the
// store, fenced by its epoch: docs/scaling.md) when a socket attaches, and kept in memory
// while the node serves it; a session that closes, moves to another node, or is given up idle
// is dropped. On the embedded store there is one node and every claim succeeds; on a shared
// store any node may take a session over, and then restores its open segment from the
// shared spool, as a restarted node does from its file spool.
//
// Loops on the shared store: leases are renewed every third of their length (a session whose
// lease could not be renewed moved on and is dropped), and sessions whose owner stopped
// renewing (it died) with spooled audio are adopted, so their held segment is finalized here.
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import { ScribedError } from '../core/errors.js';
import { decodeToPcm16, INPUT_ENCODINGS } from '../core/audio/encodings.js';
import type { SessionRecord, Store } from '../store/store.js';
import { LiveSession, type LiveSessionDeps } from './live-session.js';
import type { SpoolRecord } from './audio-spool.js';
import { restoreSpooledAudio } from './spool-recovery.js';
import type { RecognizerQueue, RecognizerUsage } from './recognizer-queue.js';
import { recognizerRoom, recognizersFree, type RecognizerRoom } from './recognizer-room.js';

export interface RegistryOptions {
  node: string;
  leaseMs: number;
  /** The store is shared by several nodes (PostgreSQL). */
  shared: boolean;
  log: Logger;
}

export interface ResumeResult {
  sessionId: string;
  transcriptionId: string;
  epoch: number;
  capturedSamples: bigint;
  accepting: boolean;
}

export class SessionRegistry {
  private readonly live = new Map<string, LiveSession>();
  private readonly taking = new Map<string, Promise<LiveSession | null>>();
  private readonly deps: LiveSessionDeps;
  private readonly timers: NodeJS.Timeout[] = [];
  /** Accounts with a session giving its recognizer back now (fair share). */
  private readonly yieldingAccounts = new Set<string>();

  constructor(
    private readonly store: Store,
    deps: LiveSessionDeps,
    private readonly opts: RegistryOptions,
  ) {
    this.deps = {
      ...deps,
      node: opts.node,
      leaseMs: opts.leaseMs,
      shared: opts.shared,
      reclaimDecoder: () => this.reclaimDecoder(),
      onClosed: (session) => this.forget(session),
    };
    deps.deferral?.observeUsage(
      () => this.recognizerUsage(),
      (accountId) => this.yieldOne(accountId),
    );
  }

  /** Fair share: one of the account's sessions that is between segments now (the most recently
   * loaded first) gives its recognizer back. None may be: the queue asks again on its timer. */
  private yieldOne(accountId: string): void {
    // One yield of an account at a time: the queue asks every 200 ms, and a second yield before
    // the first is done would give back more than the share asks.
    if (this.yieldingAccounts.has(accountId)) return;
    const session = [...this.live.values()].reverse().find((s) => s.accountId === accountId && s.canYieldRecognizer);
    if (!session) return;
    this.yieldingAccounts.add(accountId);
    void session
      .yieldRecognizer()
      .catch((err: unknown) => this.opts.log.warn({ err, sessionId: session.id }, 'giving a recognizer back failed'))
      .finally(() => this.yieldingAccounts.delete(accountId));
  }

  /** The node's recognizers and those its sessions hold, per account (fair share's input). */
  private recognizerUsage(): RecognizerUsage {
    const held = new Map<string, number>();
    for (const s of this.live.values()) if (s.holdsDecoder) held.set(s.accountId, (held.get(s.accountId) ?? 0) + 1);
    return { decoders: this.deps.engine.capacity?.().decoders ?? held.size, held };
  }

  /** Start the lease loops (the shared store; on the embedded one there is nobody to lose to). */
  start(): void {
    if (!this.opts.shared) return;
    const every = (ms: number, fn: () => Promise<void>) => {
      const t = setInterval(() => void fn().catch((err: unknown) => this.opts.log.warn({ err }, 'session lease loop failed')), ms);
      t.unref();
      this.timers.push(t);
    };
    every(Math.max(100, Math.floor(this.opts.leaseMs / 3)), () => this.renew());
    every(Math.max(200, Math.floor(this.opts.leaseMs / 2)), () => this.adoptOrphans());
  }

  stop(): void {
    for (const t of this.timers.splice(0)) clearInterval(t);
    this.deps.deferral?.stop();
  }

  /** Deferred recognition's queue and budget; null when this node never defers. */
  get deferral(): RecognizerQueue | null {
    return this.deps.deferral?.budget.enabled ? this.deps.deferral : null;
  }

  /** Free one decoder held by a paused session, oldest-loaded first. */
  private async reclaimDecoder(): Promise<boolean> {
    for (const session of this.live.values()) {
      if (session.holdsIdleDecoder && (await session.releaseHeldDecoder())) return true;
    }
    return false;
  }

  /**
   * Claim a session for this node and answer its live session: the one in memory when it
   * still serves the claimed epoch, otherwise a new one restored from the store. Null when
   * missing or (with an accountId) not that account's; SESSION_BUSY while another node's
   * lease on the current epoch runs.
   */
  take(sessionId: string, accountId: string | null): Promise<LiveSession | null> {
    let pending = this.taking.get(sessionId);
    if (!pending) {
      pending = this.claim(sessionId, accountId);
      this.taking.set(sessionId, pending);
      pending.finally(() => this.taking.delete(sessionId)).catch(() => undefined);
    }
    return pending.then((s) => (s && (accountId === null || s.accountId === accountId) ? s : null));
  }

  private async claim(sessionId: string, accountId: string | null): Promise<LiveSession | null> {
    const startedAt = performance.now();
    const claim = await this.store.claimSession(sessionId, accountId, this.opts.node, this.opts.leaseMs, new Date());
    if (claim.kind === 'not_found') return null;
    if (claim.kind === 'busy')
      throw new ScribedError('SESSION_BUSY', 'another node serves a socket of this session epoch; resume to move it here');
    const record = claim.session;
    const known = this.live.get(sessionId);
    if (known && !known.hasMoved && known.cursor.epoch === record.epoch && claim.previousOwner === this.opts.node) {
      known.ownedAt(record.epoch);
      return known;
    }
    if (known) await known.movedOn('reloaded from the store');
    const session = new LiveSession(record, this.deps);
    session.ownedAt(record.epoch);
    if (record.state === 'CLOSED') return session;
    this.live.set(sessionId, session);
    if (this.opts.shared) {
      const claimedAt = performance.now();
      const restored = await this.restoreShared(session, record, claim.channelState);
      // A session resumed from elsewhere (epoch 2 on) with an empty open segment: its decoder
      // loads aside too, queued before the socket's attach, which then does not wait for it.
      if (restored.openSamples === 0 && record.epoch > 1)
        void session
          .loadDecoderAside()
          .catch((err: unknown) => this.opts.log.warn({ err, sessionId }, 'loading a decoder for a taken-over session failed'));
      // The takeover's own cost, logged so failovers can be split (bench/failover-haproxy.ts).
      this.opts.log.info(
        {
          sessionId,
          previousOwner: claim.previousOwner,
          epoch: record.epoch,
          claimMs: Math.round(claimedAt - startedAt),
          spoolReadMs: Math.round(restored.readMs),
          openSamples: restored.openSamples,
        },
        'session taken over',
      );
    }
    return session;
  }

  /** A session taken over on the shared store: the open segment from the shared spool. */
  private async restoreShared(
    session: LiveSession,
    record: SessionRecord,
    channelState: number[] | null,
  ): Promise<{ readMs: number; openSamples: number }> {
    const readFrom = performance.now();
    const chunks = await this.store.readSpool(record.id);
    const records: SpoolRecord[] = [];
    for (const c of chunks) {
      const pcm = decodeToPcm16('pcm_s16le_16000', c.pcm); // as the file spool reads its records
      let at = 0;
      for (const n of c.frames) {
        records.push({ startSample: c.startSample + BigInt(at), samples: pcm.subarray(at, at + n) });
        at += n;
      }
    }
    const readMs = performance.now() - readFrom;
    const openSamples = await restoreSpooledAudio({ store: this.store, log: this.opts.log }, session, record, records, channelState);
    return { readMs, openSamples };
  }

  /**
   * Resume from this node. The session in memory resumes itself when this node still serves
   * it (its decoder and open utterance go on); otherwise the store opens the new epoch, which
   * fences whichever node served the old one, and the next socket's node claims it.
   */
  async resume(sessionId: string, accountId: string, clientCaptured: bigint | undefined): Promise<ResumeResult> {
    const known = this.live.get(sessionId);
    if (known && known.accountId === accountId && known.ownership) {
      try {
        const r = await known.resume(clientCaptured);
        return { sessionId, transcriptionId: known.transcriptionId, ...r };
      } catch (err) {
        if (!(err instanceof ScribedError && err.code === 'SESSION_MOVED')) throw err;
      }
    }
    const record = await this.store.resumeSession(sessionId, accountId, { clientCaptured, leaseMs: this.opts.leaseMs, now: new Date() });
    if (!record) throw new ScribedError('NOT_FOUND', `session ${sessionId} does not exist`);
    if (known) await known.movedOn('resumed through another path');
    return {
      sessionId,
      transcriptionId: record.transcriptionId,
      epoch: record.epoch,
      capturedSamples: record.capturedSamples,
      accepting: await this.canAccept(record),
    };
  }

  private async canAccept(record: SessionRecord): Promise<boolean> {
    const rate = INPUT_ENCODINGS[record.options.inputEncoding as keyof typeof INPUT_ENCODINGS]?.sampleRateHz ?? 16_000;
    if (record.charactersCharged * BigInt(rate) > record.capturedSamples) return true;
    return ((await this.store.getAccount(record.accountId))?.characters ?? 0n) > 0n;
  }

  private async renew(): Promise<void> {
    const owned = [...this.live.values()].filter((s) => s.ownership !== null);
    if (owned.length === 0) return;
    const kept = new Set(
      await this.store.renewLeases(
        this.opts.node,
        owned.map((s) => s.id),
        this.opts.leaseMs,
        new Date(),
      ),
    );
    // All at once: each movedOn stops its session's work at once, then waits its queue.
    const lost = owned.filter((s) => !kept.has(s.id) && s.state !== 'CLOSED');
    await Promise.allSettled(lost.map((s) => s.movedOn('lease not renewed: the session moved on')));
  }

  private async adoptOrphans(): Promise<void> {
    for (const o of await this.store.listOrphanedSessions(new Date(), 4)) {
      const session = await this.take(o.id, null).catch((err: unknown) => {
        this.opts.log.debug({ err, sessionId: o.id }, 'orphaned session taken by another node first');
        return null;
      });
      if (session) this.opts.log.info({ sessionId: o.id }, 'adopted a session whose node stopped renewing its lease');
    }
  }

  /** A claimed session that got no socket (its attach was refused): on a shared store the
   * claim is let go at once, so another node can take the session without waiting a lease. */
  async releaseIfIdle(session: LiveSession): Promise<void> {
    if (!this.opts.shared || session.hasSocket || session.holdsDecoder || session.state === 'CLOSED') return;
    const fence = session.ownership;
    if (!fence) return;
    await this.store.releaseSession(fence);
    await session.movedOn('claim released: no socket attached');
  }

  /** This node's recognizers now (recognizer-room.ts); null when the engine cannot tell. */
  room(): RecognizerRoom | null {
    return recognizerRoom(this.deps.engine, this.live.values());
  }

  /** Whether `n` more sockets could be served now: recognizers free (or held by paused
   * sessions), else room to defer their recognition. */
  hasRoomFor(n: number): boolean {
    if (n <= 0 || recognizersFree(this.room(), n)) return true;
    return this.deferral?.budget.hasRoom() ?? false;
  }

  /** The session this node serves now, if any (no claim, no load). */
  served(sessionId: string): LiveSession | undefined {
    return this.live.get(sessionId);
  }

  /** Forget a session that closed or left this node; its state lives on in the store. */
  forget(session: { readonly id: string }): void {
    if (this.live.get(session.id) === session) this.live.delete(session.id);
  }

  all(): LiveSession[] {
    return [...this.live.values()];
  }

  countByState(): Record<string, number> {
    const counts: Record<string, number> = { RECORDING: 0, PAUSED: 0, CLOSED: 0 };
    for (const s of this.live.values()) counts[s.state] = (counts[s.state] ?? 0) + 1;
    return counts;
  }

  async shutdown(): Promise<void> {
    this.stop();
    await Promise.allSettled(this.all().map((s) => s.shutdown()));
  }
}
