// RTP ingest: every stream the receiver finds becomes one scribed session, streamed by the
// client library's SessionStreamer (which owns acknowledgement, resume and re-sending), with
// its transcript written to `outDir` as finals arrive.
//
// The session's stream id is `rtp:<listen port>:<SSRC>:<source address>:<source port>`, so a
// restarted `scribed rtp` receiving the same call re-attaches to the same session (the
// Idempotency-Key is derived from it) instead of opening a second one. A stream that starts
// again after its key's earlier stream ended gets `#<generation>` appended, so it opens a new
// session rather than landing on the earlier, closed one.
//
// RTP cannot be paused: audio is pushed as the network delivers it. Each streamer therefore
// runs with `onFull: 'drop-oldest'` (a full buffer drops its oldest unacknowledged audio,
// counted as overflow). Audio that arrives while the session is still being created (the
// server may be down) is held in a queue of at most `pendingAudioSeconds`, oldest dropped and
// counted as overflow. A call that ends before its session exists keeps trying (its audio
// reaches the server once it is back), but at most `maxStreams` such calls are kept: the
// oldest beyond that is given up. stop() gives up every call whose session never started, so
// memory and retry loops stay bounded however long the server is away.
//
// Giving up on a call (the bounds of `scribed stream`, src/client/give-up.ts): its session
// could not be created within connectTimeoutMs, or the account had no Characters for
// noCreditTimeoutMs, or one of the bounds above. It is one error log line and
// `scribed_rtp_streams_given_up_total{reason}`; the daemon goes on serving other calls. With
// an `outDir`, the call's audio is not lost: what was held and the rest of the call are
// written to `<outDir>/<stream id>.<encoding>.raw` for `scribed stream --input` to send later.
import { EventEmitter } from 'node:events';
import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';
import { SessionStreamer, type FinalSegment, type StreamSummary } from '../client/session-streamer.js';
import { TranscriptFiles } from '../client/transcript-files.js';
import type { ClientMetrics } from '../client/metrics.js';
import { giveUpReason } from '../client/give-up.js';
import type { StreamGiveUpReason } from './metrics.js';
import { INPUT_ENCODINGS } from '../core/audio/encodings.js';
import { RtpReceiver, type RtpReceiverAddress, type RtpReceiverOptions, type RtpStream, type RtpStreamEnd } from './receiver.js';

export interface RtpIngestOptions extends Omit<RtpReceiverOptions, 'logger' | 'metrics'> {
  url: string;
  accessKey: string;
  outDir?: string;
  /** Bound of each stream's unacknowledged audio, in seconds. */
  bufferSeconds?: number;
  /** Bound of the audio held for a stream whose session is not created yet, in seconds
   * (default 30, at most bufferSeconds). */
  pendingAudioSeconds?: number;
  sessionOptions?: Record<string, unknown>;
  /** How long each call's session may take to be created while the server cannot be
   * reached, ms (SessionStreamer's default, 30 s, when absent); then the call is given up. */
  connectTimeoutMs?: number;
  /** How long a call's session may wait for Characters, ms (SessionStreamer's default, 60 s);
   * then the call is given up. */
  noCreditTimeoutMs?: number;
  logger: Logger;
  clientMetrics?: ClientMetrics;
  rtpMetrics?: RtpReceiverOptions['metrics'];
}

export interface RtpSessionReport {
  streamId: string;
  ssrc: number;
  source: string;
  sessionId: string | null;
  end: RtpStreamEnd;
  summary: StreamSummary | null;
  error: string | null;
  /** Why the call was given up, or null when it was delivered (or its close failed). */
  givenUp: StreamGiveUpReason | null;
  /** Where its undelivered audio was written (with an outDir), or null. */
  undeliveredFile: string | null;
}

interface RtpIngestEvents {
  session: [info: { streamId: string; sessionId: string; ssrc: number; source: string }];
  final: [info: { streamId: string; sessionId: string; segment: FinalSegment }];
  done: [report: RtpSessionReport];
}

/** `rtp:<listen port>:<ssrc hex>:<address>:<port>`, and `#<generation>` from the second
 * stream of the same key on (a call that resumed after an idle end gets its own session). */
export function rtpStreamId(listenPort: number, stream: Pick<RtpStream, 'info'>): string {
  const { ssrc, address, port, generation } = stream.info;
  return `rtp:${listenPort}:${ssrc.toString(16).padStart(8, '0')}:${address}:${port}${generation > 1 ? `#${generation}` : ''}`;
}

export const DEFAULT_PENDING_AUDIO_SECONDS = 30;

export class RtpIngest extends EventEmitter<RtpIngestEvents> {
  readonly receiver: RtpReceiver;
  readonly #o: RtpIngestOptions;
  readonly #pending = new Set<Promise<RtpSessionReport>>();
  readonly #streamers = new Set<SessionStreamer>();
  /** Streamers whose session is not created yet. */
  readonly #unstarted = new Set<SessionStreamer>();
  /** Of those, the ones whose stream already ended, oldest first. */
  readonly #endedUnstarted = new Set<SessionStreamer>();
  /** Why a streamer was aborted by the ingest itself (its bounds, a stop), for the report. */
  readonly #abortReasons = new WeakMap<SessionStreamer, StreamGiveUpReason>();
  #listenPort = 0;

  constructor(options: RtpIngestOptions) {
    super();
    this.#o = options;
    this.receiver = new RtpReceiver({ ...options, logger: options.logger, metrics: options.rtpMetrics });
    this.receiver.on('stream', (stream) => {
      const done = this.#run(stream);
      this.#pending.add(done);
      void done.finally(() => this.#pending.delete(done));
    });
  }

  async start(): Promise<RtpReceiverAddress> {
    const address = await this.receiver.start();
    this.#listenPort = address.port;
    return address;
  }

  /** Sessions still being streamed or closed. */
  get activeSessions(): number {
    return this.#pending.size;
  }

  /** Wait until every stream that has ended has its session closed. */
  async settled(): Promise<RtpSessionReport[]> {
    return Promise.all([...this.#pending]);
  }

  /** Stop receiving, end every stream and close its session; resolves with their reports.
   * Streams whose session was never created (the server unreachable) are given up: their
   * held audio is dropped (logged) rather than waiting for the server for ever. */
  async stop(): Promise<RtpSessionReport[]> {
    await this.receiver.stop();
    for (const streamer of this.#unstarted) {
      this.#abortReasons.set(streamer, 'shutdown');
      void streamer.abort().catch(() => undefined);
    }
    return this.settled();
  }

  /** Give up on sessions still closing (stop bound exceeded): each stays PAUSED on the
   * server, so a restarted ingest re-attaches to it by stream id. */
  async abortAll(): Promise<void> {
    await Promise.all([...this.#streamers].map((s) => s.abort().catch(() => undefined)));
  }

  async #run(stream: RtpStream): Promise<RtpSessionReport> {
    const streamId = rtpStreamId(this.#listenPort, stream);
    const source = `${stream.info.address}:${stream.info.port}`;
    const encoding = stream.info.format.sessionEncoding;
    const enc = INPUT_ENCODINGS[encoding];
    const bufferSamples = Math.round((this.#o.bufferSeconds ?? 60) * enc.sampleRateHz);
    const pendingBytes =
      Math.min(bufferSamples, Math.round((this.#o.pendingAudioSeconds ?? DEFAULT_PENDING_AUDIO_SECONDS) * enc.sampleRateHz)) *
      enc.bytesPerSample;
    let log = stream.log.child({ streamId });
    const streamer = new SessionStreamer({
      url: this.#o.url,
      accessKey: this.#o.accessKey,
      encoding,
      streamId,
      title: `RTP ${stream.info.ssrc.toString(16).padStart(8, '0')} from ${source}`,
      sessionOptions: this.#o.sessionOptions,
      bufferSamples,
      logger: log,
      metrics: this.#o.clientMetrics,
      onFull: 'drop-oldest',
      ...(this.#o.connectTimeoutMs !== undefined ? { connectTimeoutMs: this.#o.connectTimeoutMs } : {}),
      ...(this.#o.noCreditTimeoutMs !== undefined ? { noCreditTimeoutMs: this.#o.noCreditTimeoutMs } : {}),
    });
    this.#streamers.add(streamer);
    this.#unstarted.add(streamer);

    // Audio until the session exists, bounded by pendingBytes.
    const early: Buffer[] = [];
    let earlyBytes = 0;
    let droppedEarlyBytes = 0;
    let started = false;
    let failed: Error | null = null;
    let writes: Promise<void> = Promise.resolve();
    const ended = new Promise<RtpStreamEnd>((resolve) => stream.once('end', resolve));
    void ended.then(() => {
      if (!this.#unstarted.has(streamer)) return;
      // The call is over but its session does not exist yet: keep trying, within a bound.
      this.#endedUnstarted.add(streamer);
      if (this.#endedUnstarted.size > (this.#o.maxStreams ?? 64)) {
        const oldest = this.#endedUnstarted.values().next().value!;
        this.#endedUnstarted.delete(oldest);
        this.#abortReasons.set(oldest, 'pending_limit');
        void oldest.abort().catch(() => undefined);
      }
    });

    // Giving up: one line, one count; with an outDir the held audio and the rest of the call
    // go to a raw file instead of nowhere.
    let givenUp: StreamGiveUpReason | null = null;
    let undelivered: fs.WriteStream | null = null;
    let undeliveredFile: string | null = null;
    const giveUp = (reason: StreamGiveUpReason, why: string, held: Buffer[]) => {
      if (givenUp) return;
      givenUp = reason;
      // A streamer failed for want of Characters still reconnects until aborted, resuming the
      // session again and again for the rest of the call: stop it now (the session stays
      // PAUSED with what it acknowledged).
      if (reason === 'no_credit') void streamer.abort().catch(() => undefined);
      this.#o.rtpMetrics?.streamsGivenUp.inc({ reason });
      const heldSamples = held.reduce((n, b) => n + b.length, 0) / enc.bytesPerSample;
      if (this.#o.outDir) {
        undeliveredFile = path.join(this.#o.outDir, `${streamId.replace(/[^A-Za-z0-9._-]/g, '_')}.${encoding}.raw`);
        try {
          fs.mkdirSync(this.#o.outDir, { recursive: true });
          undelivered = fs.createWriteStream(undeliveredFile, { flags: 'a' });
          undelivered.on('error', (err) => log.error({ err, file: undeliveredFile }, 'could not write the undelivered audio'));
          for (const b of held) undelivered.write(b);
        } catch (err) {
          log.error({ err, file: undeliveredFile }, 'could not write the undelivered audio');
          undelivered = null;
          undeliveredFile = null;
        }
      }
      const kept = undeliveredFile
        ? `its audio is kept in ${undeliveredFile} (the rest of the call is added until it ends; send it later with scribed stream --input FILE --encoding ${encoding})`
        : `its audio is dropped (${heldSamples} samples held; with --out it would be kept)`;
      log.error({ reason, url: this.#o.url, heldSamples, file: undeliveredFile }, `gave up on the call: ${why}; ${kept}`);
    };

    // The streamer's own message speaks to `scribed stream` (--stream-id); a call has none.
    const noCreditWhy = () =>
      `the account has had no Characters for ${Math.round((this.#o.noCreditTimeoutMs ?? 60_000) / 1000)} s (an operator adds them with \`scribed accounts credit --account ACCOUNT_ID --characters N\`); session ${sessionId} stays paused with the audio it acknowledged`;

    stream.on('audio', (chunk) => {
      if (undelivered) {
        undelivered.write(chunk);
        return;
      }
      if (failed) return;
      if (!started) {
        early.push(chunk);
        earlyBytes += chunk.length;
        let dropped = 0;
        while (earlyBytes > pendingBytes && early.length > 0) {
          // The oldest chunk goes whole, or its oldest part when it alone is over the bound.
          const head = early[0]!;
          const cut = Math.min(head.length, earlyBytes - pendingBytes); // whole samples: both are
          if (cut >= head.length) early.shift();
          else early[0] = head.subarray(cut);
          earlyBytes -= cut;
          dropped += cut;
        }
        if (dropped > 0) {
          if (droppedEarlyBytes === 0)
            log.warn(
              { pendingAudioSeconds: pendingBytes / enc.bytesPerSample / enc.sampleRateHz },
              'session not created yet and its held audio is full: the oldest is dropped',
            );
          droppedEarlyBytes += dropped;
          this.#o.clientMetrics?.overflows.inc();
          this.#o.clientMetrics?.overflowSeconds.inc(dropped / enc.bytesPerSample / enc.sampleRateHz);
        }
        return;
      }
      writes = writes
        .then(() => streamer.write(chunk))
        .catch((err: Error) => {
          failed ??= err;
          if (giveUpReason(err) === 'no_credit') giveUp('no_credit', noCreditWhy(), []);
        });
    });

    let sessionId: string | null = null;
    let files: TranscriptFiles | null = null;
    streamer.on('final', (segment: FinalSegment) => {
      try {
        files?.append(segment);
      } catch (err) {
        log.error({ err }, 'could not write the transcript file');
      }
      if (sessionId) this.emit('final', { streamId, sessionId, segment });
    });
    streamer.on('notice', (notice: { code: string; message: string }) => log.info({ notice }, 'server notice'));
    streamer.on('error', (err: Error) => log.error({ err }, 'stream error'));

    try {
      try {
        sessionId = (await streamer.start()).sessionId;
      } finally {
        this.#unstarted.delete(streamer);
        this.#endedUnstarted.delete(streamer);
      }
      log = log.child({ sessionId });
      if (this.#o.outDir) files = new TranscriptFiles(this.#o.outDir, sessionId);
      log.info({ encoding }, 'rtp stream streaming to session');
      this.emit('session', { streamId, sessionId, ssrc: stream.info.ssrc, source });
      if (droppedEarlyBytes > 0)
        log.warn({ droppedSamples: droppedEarlyBytes / enc.bytesPerSample }, 'audio dropped while the session was being created');
      started = true;
      const queued = early.splice(0);
      writes = writes.then(async () => {
        for (const chunk of queued) await streamer.write(chunk);
      });
    } catch (err) {
      failed = err as Error;
      const reason = this.#abortReasons.get(streamer) ?? giveUpReason(err) ?? 'refused';
      const why =
        reason === 'shutdown'
          ? 'the process stopped before its session could be created'
          : reason === 'pending_limit'
            ? `more than --max-streams (${this.#o.maxStreams ?? 64}) ended calls were waiting for a session`
            : (err as Error).message;
      if (droppedEarlyBytes > 0)
        log.warn({ droppedSamples: droppedEarlyBytes / enc.bytesPerSample }, 'audio dropped while the session was being created');
      giveUp(reason, why, early.splice(0));
    }

    const end = await ended;
    let summary: StreamSummary | null = null;
    if (sessionId && !failed) {
      try {
        await writes;
        if (failed) throw failed;
        summary = await streamer.end();
        log.info(
          {
            reason: end.reason,
            capturedSamples: summary.capturedSamples,
            acknowledgedSamples: summary.acknowledgedSamples,
            overflowSamples: summary.overflowSamples,
            segments: summary.segments,
            lost: end.stats.lost,
          },
          'rtp session closed',
        );
      } catch (err) {
        failed = err as Error;
        if (giveUpReason(err) === 'no_credit') giveUp('no_credit', noCreditWhy(), []);
        else log.error({ err }, 'closing the session failed');
      }
    }
    if (undelivered) {
      const file = undelivered as fs.WriteStream;
      await new Promise<void>((resolve) => file.end(resolve));
    }
    if (failed && sessionId) await streamer.abort().catch(() => undefined);
    // Closed whatever happened: with the complete transcript after a clean close, else with
    // the finals received (the session stays resumable; its transcript is on the server).
    try {
      files?.close(summary?.finals ?? []);
    } catch (err) {
      log.error({ err }, 'could not write the transcript files');
    }
    this.#streamers.delete(streamer);
    const report: RtpSessionReport = {
      streamId,
      ssrc: stream.info.ssrc,
      source,
      sessionId,
      end,
      summary,
      error: failed ? failed.message : null,
      givenUp,
      undeliveredFile,
    };
    this.emit('done', report);
    return report;
  }
}
