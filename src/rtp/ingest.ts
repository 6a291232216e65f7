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
// counted as overflow), and audio that arrives while the session is still being created is
// held in a queue with the same bound.
import { EventEmitter } from 'node:events';
import type { Logger } from 'pino';
import { SessionStreamer, type FinalSegment, type StreamSummary } from '../client/session-streamer.js';
import { TranscriptFiles } from '../client/transcript-files.js';
import type { ClientMetrics } from '../client/metrics.js';
import { INPUT_ENCODINGS } from '../core/audio/encodings.js';
import { RtpReceiver, type RtpReceiverAddress, type RtpReceiverOptions, type RtpStream, type RtpStreamEnd } from './receiver.js';

export interface RtpIngestOptions extends Omit<RtpReceiverOptions, 'logger' | 'metrics'> {
  url: string;
  accessKey: string;
  outDir?: string;
  /** Bound of each stream's unacknowledged audio, in seconds. */
  bufferSeconds?: number;
  sessionOptions?: Record<string, unknown>;
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

export class RtpIngest extends EventEmitter<RtpIngestEvents> {
  readonly receiver: RtpReceiver;
  readonly #o: RtpIngestOptions;
  readonly #pending = new Set<Promise<RtpSessionReport>>();
  readonly #streamers = new Set<SessionStreamer>();
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

  /** Stop receiving, end every stream and close its session; resolves with their reports. */
  async stop(): Promise<RtpSessionReport[]> {
    await this.receiver.stop();
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
    });
    this.#streamers.add(streamer);

    // Audio until the session exists, bounded like the streamer's own buffer.
    const early: Buffer[] = [];
    let earlyBytes = 0;
    let droppedEarlyBytes = 0;
    let started = false;
    let failed: Error | null = null;
    let writes: Promise<void> = Promise.resolve();
    const ended = new Promise<RtpStreamEnd>((resolve) => stream.once('end', resolve));

    stream.on('audio', (chunk) => {
      if (failed) return;
      if (!started) {
        early.push(chunk);
        earlyBytes += chunk.length;
        while (earlyBytes > bufferSamples * enc.bytesPerSample && early.length > 1) {
          const dropped = early.shift()!;
          earlyBytes -= dropped.length;
          droppedEarlyBytes += dropped.length;
        }
        return;
      }
      writes = writes.then(() => streamer.write(chunk)).catch((err: Error) => {
        failed ??= err;
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
      sessionId = (await streamer.start()).sessionId;
      log = log.child({ sessionId });
      if (this.#o.outDir) files = new TranscriptFiles(this.#o.outDir, sessionId);
      log.info({ encoding }, 'rtp stream streaming to session');
      this.emit('session', { streamId, sessionId, ssrc: stream.info.ssrc, source });
      if (droppedEarlyBytes > 0) log.warn({ droppedSamples: droppedEarlyBytes / enc.bytesPerSample }, 'audio dropped while the session was being created');
      started = true;
      const queued = early.splice(0);
      writes = writes.then(async () => {
        for (const chunk of queued) await streamer.write(chunk);
      });
    } catch (err) {
      failed = err as Error;
      log.error({ err }, 'could not start a session for the rtp stream; its audio is dropped');
    }

    const end = await ended;
    let summary: StreamSummary | null = null;
    if (sessionId && !failed) {
      try {
        await writes;
        if (failed) throw failed;
        summary = await streamer.end();
        files?.close(summary.finals);
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
        log.error({ err }, 'closing the session failed');
      }
    }
    if (failed && sessionId) await streamer.abort().catch(() => undefined);
    this.#streamers.delete(streamer);
    const report: RtpSessionReport = { streamId, ssrc: stream.info.ssrc, source, sessionId, end, summary, error: failed ? failed.message : null };
    this.emit('done', report);
    return report;
  }
}
