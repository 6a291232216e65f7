// Where a SIPREC recording session meets scribed's native real-time sessions (as AudioHook's
// native-legs.ts does): the recorded call as a scribed call (its external id the communication
// session's id, so every dialog of one call lands in it), one live session per participant
// stream created as every adapter creates them (server/live/open-live.ts), and each leg driven
// through the session's typed commands (session/session-driver.ts) with 16-bit PCM at 8 kHz
// (both G.711 laws decode to it, so a codec change on a re-INVITE keeps the leg).
import { ScribedError } from '../../core/errors.js';
import { newId } from '../../core/ids.js';
import { CLOSE_CODES } from '../../core/protocol.js';
import { callRequestHash } from '../../core/calls.js';
import { legTitle } from '../../core/channels.js';
import type { LiveSession, SessionSocket } from '../../session/live-session.js';
import { SessionDriver } from '../../session/session-driver.js';
import type { AppContext } from '../context.js';
import { createLiveSession } from '../live/open-live.js';
import { accountStreamsOf } from '../account-admission.js';
import { accountStreamLimit } from '../../core/account-streams.js';

const INPUT_ENCODING = 'pcm_s16le_8000';
const BYTES_PER_SAMPLE = 2;
/** How long a leg's close waits for its last final before letting the session go. */
const CLOSE_WAIT_MS = 30_000;

export interface CallSpec {
  accountId: string;
  /** The call's external id: the metadata's session id, else the dialog's Call-ID. */
  externalId: string;
  title: string;
  agentId: string | null;
}

export class SiprecLeg {
  private readonly driver: SessionDriver;
  private accepting = true;
  private ended = false;
  private endedWaiters: Array<() => void> = [];
  private readonly epoch: number;
  private sampleOffset: number;
  private readonly maxPayload: number;

  constructor(
    readonly session: LiveSession,
    readonly speaker: string,
    onError: (code: string, message: string) => void,
  ) {
    this.epoch = session.cursor.epoch;
    this.sampleOffset = session.cursor.epochReceived;
    const max = session.maxFramePayloadBytes;
    this.maxPayload = max - (max % BYTES_PER_SAMPLE);
    const sink: SessionSocket = {
      send: (event) => {
        if (event.type === 'accepting') this.accepting = event.accepting;
        if (event.type === 'closed') this.markEnded();
        if (event.type === 'error') onError(event.code, event.message);
      },
      close: (code) => {
        if (code !== CLOSE_CODES.normal || this.ended) this.markEnded();
      },
    };
    this.driver = new SessionDriver(session, sink, null);
  }

  private markEnded(): void {
    this.ended = true;
    for (const w of this.endedWaiters.splice(0)) w();
  }

  attach(): Promise<void> {
    return this.session.attach(this.driver.sink);
  }

  /** PCM from the stream. While the session does not accept audio (spent balance, recognition
   * backlog) it is dropped without moving the cursor. */
  audio(pcm: Buffer): void {
    if (!this.accepting || this.ended) return;
    for (let at = 0; at < pcm.length; at += this.maxPayload) {
      const payload = pcm.subarray(at, Math.min(pcm.length, at + this.maxPayload));
      void this.driver.audio({ epoch: this.epoch, sampleOffset: this.sampleOffset, payload });
      this.sampleOffset += payload.length / BYTES_PER_SAMPLE;
    }
  }

  /** Ends the leg: its last final, then the session lets its socket go. */
  async end(): Promise<void> {
    if (!this.ended) {
      const done = new Promise<void>((resolve) => this.endedWaiters.push(resolve));
      void this.driver.close();
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([done, new Promise<void>((r) => (timer = setTimeout(r, CLOSE_WAIT_MS)))]);
      clearTimeout(timer);
    }
    await this.driver.detach().catch(() => undefined);
  }
}

/** Calls and legs for recording sessions, on one node. */
export class SiprecCalls {
  /** Call creations in flight by external id: two dialogs of one call make one call. */
  private readonly creating = new Map<string, Promise<string>>();

  constructor(private readonly ctx: AppContext) {}

  /** The call of this external id: the account's latest one, or a new one. */
  callFor(spec: CallSpec): Promise<string> {
    const inFlight = this.creating.get(spec.externalId);
    if (inFlight) return inFlight;
    const p = this.findOrCreate(spec).finally(() => this.creating.delete(spec.externalId));
    this.creating.set(spec.externalId, p);
    return p;
  }

  private async findOrCreate(spec: CallSpec): Promise<string> {
    const [latest] = await this.ctx.store.listCalls(spec.accountId, 1, { externalId: spec.externalId });
    // A communication session's id is unique to its call: a later dialog of it (a stream per
    // INVITE, or a recording restarted) joins the call the first one made.
    if (latest) return latest.id;
    const body = { title: spec.title, externalId: spec.externalId, agentId: spec.agentId };
    const outcome = await this.ctx.store.createCall({
      call: {
        id: newId('call', this.ctx.now()),
        accountId: spec.accountId,
        externalId: spec.externalId,
        title: spec.title,
        agentId: spec.agentId,
        createdAt: this.ctx.now().toISOString(),
      },
      idempotency: { key: `siprec:${spec.externalId}`, requestHash: callRequestHash(body) },
    });
    if (outcome.kind === 'conflict') {
      // Made meanwhile by another node (a shared store) under other details: join it.
      const [made] = await this.ctx.store.listCalls(spec.accountId, 1, { externalId: spec.externalId });
      if (made) return made.id;
      throw new ScribedError('IDEMPOTENCY_CONFLICT', 'a SIPREC call key was reused');
    }
    if (outcome.kind === 'created') this.ctx.metrics.callsCreated.inc();
    return outcome.call.id;
  }

  /** Places for `count` legs among the account's streams on this node (the operator's
   * --max-streams-per-account), held until the returned settle() once the legs are attached or
   * refused; null when the account is at its limit. */
  admit(accountId: string, key: string, count: number): (() => void) | null {
    const streams = accountStreamsOf(this.ctx);
    const limit = accountStreamLimit(this.ctx.config.maxStreamsPerAccount);
    const streaming = this.ctx.sessions
      .all()
      .filter((s) => s.accountId === accountId && s.hasSocket)
      .map((s) => s.id);
    const ids: string[] = [];
    const settle = () => ids.splice(0).forEach((id) => streams.settle(accountId, id));
    for (let i = 0; i < count; i++) {
      const id = `siprec-${key}-${i}`;
      if (!streams.tryAdmit(accountId, id, limit, streaming)) {
        settle();
        return null;
      }
      ids.push(id);
    }
    return settle;
  }

  /** A leg of the call: its session created and claimed on this node, then attached. */
  async openLeg(
    accountId: string,
    callId: string,
    callTitle: string,
    speaker: string,
    onError: (code: string, message: string) => void,
  ): Promise<SiprecLeg> {
    const body = { title: legTitle(callTitle, speaker), options: { inputEncoding: INPUT_ENCODING, segmentCommitMode: 'vad' } };
    const outcome = await createLiveSession(this.ctx, { accountId, body, call: { callId, speaker } });
    if (outcome.kind === 'conflict') throw new ScribedError('IDEMPOTENCY_CONFLICT', 'a SIPREC leg key was reused');
    const session = await this.ctx.sessions.take(outcome.session.id, accountId);
    if (!session) throw new ScribedError('INTERNAL', `session ${outcome.session.id} vanished after its creation`);
    const leg = new SiprecLeg(session, speaker, onError);
    try {
      await leg.attach();
    } catch (err) {
      await this.ctx.sessions.releaseIfIdle(session).catch(() => undefined);
      throw err;
    }
    return leg;
  }
}
