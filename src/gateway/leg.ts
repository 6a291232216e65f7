// One leg of a call (one speaker's audio) streamed as one session through the client
// library's SessionStreamer, which owns acknowledgement, resume and re-sending: a server
// restart or a dropped socket loses nothing the leg received. Audio that arrives while the
// call and the session are being created is held (bounded, oldest dropped and counted); a PBX
// cannot be paused, so the streamer drops its oldest unacknowledged audio when its buffer is
// full (counted as overflow), never the newest.
//
// The session's stream id is `gateway:<protocol>:<call external id>:<speaker>`, so a restarted
// gateway that receives the rest of a call re-attaches to the same session (the
// Idempotency-Key is derived from it) and the audio the server acknowledged stays.
import type { Logger } from 'pino';
import { SessionStreamer, type FinalSegment, type StreamSummary } from '../client/session-streamer.js';
import { TranscriptFiles } from '../client/transcript-files.js';
import type { ClientMetrics } from '../client/metrics.js';
import { INPUT_ENCODINGS, type InputEncodingName } from '../core/audio/encodings.js';
import type { CallLinker } from './call-link.js';
import type { GatewayMetrics, GatewayProtocol } from './metrics.js';

export interface LegShared {
  url: string;
  accessKey: string;
  sessionOptions?: Record<string, unknown>;
  bufferSeconds: number;
  pendingAudioSeconds: number;
  outDir?: string;
  clientMetrics?: ClientMetrics;
  metrics?: GatewayMetrics;
  linker: CallLinker;
}

export interface LegSpec {
  protocol: GatewayProtocol;
  /** The PBX's id of the call. */
  externalId: string;
  speaker: string;
  encoding: InputEncodingName;
  callTitle: string;
  logger: Logger;
  /** The call's agent, when the PBX's metadata names one. */
  agentId?: string;
}

export interface LegReport {
  protocol: GatewayProtocol;
  externalId: string;
  speaker: string;
  callId: string | null;
  sessionId: string | null;
  transcriptionId: string | null;
  /** Samples the PBX sent on this leg (fill for timestamp gaps included). */
  receivedSamples: number;
  summary: StreamSummary | null;
  error: string | null;
}

export function legStreamId(protocol: string, externalId: string, speaker: string): string {
  return `gateway:${protocol}:${externalId}:${speaker}`;
}

export class GatewayLeg {
  readonly streamId: string;
  private log: Logger;
  private streamer: SessionStreamer | null = null;
  private early: Buffer[] = [];
  private earlyBytes = 0;
  private droppedEarlyBytes = 0;
  private readonly pendingBytes: number;
  private readonly bps: number;
  private readonly rate: number;
  private started = false;
  private failed: Error | null = null;
  private writes: Promise<void> = Promise.resolve();
  private receivedSamples = 0;
  private callId: string | null = null;
  private files: TranscriptFiles | null = null;
  private readonly startup: Promise<void>;
  private aborted = false;

  constructor(
    private readonly shared: LegShared,
    readonly spec: LegSpec,
    private readonly onFinal?: (leg: GatewayLeg, segment: FinalSegment) => void,
  ) {
    this.streamId = legStreamId(spec.protocol, spec.externalId, spec.speaker);
    const enc = INPUT_ENCODINGS[spec.encoding];
    this.bps = enc.bytesPerSample;
    this.rate = enc.sampleRateHz;
    this.pendingBytes = Math.round(Math.min(shared.pendingAudioSeconds, shared.bufferSeconds) * this.rate) * this.bps;
    // The streamer adds streamId to its own lines.
    this.log = spec.logger.child({ speaker: spec.speaker });
    shared.metrics?.legs.inc({ protocol: spec.protocol });
    shared.metrics?.openLegs.inc({ protocol: spec.protocol });
    this.startup = this.start();
  }

  get sessionId(): string | null {
    return this.streamer?.id || null;
  }

  /** Take audio of the leg's encoding. Never blocks: the PBX cannot wait. */
  write(chunk: Buffer): void {
    if (this.failed || this.aborted || chunk.length === 0) return;
    this.receivedSamples += chunk.length / this.bps;
    this.shared.metrics?.audioSeconds.inc({ protocol: this.spec.protocol }, chunk.length / this.bps / this.rate);
    if (!this.started) {
      this.early.push(chunk);
      this.earlyBytes += chunk.length;
      while (this.earlyBytes > this.pendingBytes && this.early.length > 0) {
        const head = this.early[0]!;
        const cut = Math.min(head.length, this.earlyBytes - this.pendingBytes);
        if (cut >= head.length) this.early.shift();
        else this.early[0] = head.subarray(cut);
        this.earlyBytes -= cut;
        if (this.droppedEarlyBytes === 0) this.log.warn('session not created yet and the held audio is full: the oldest is dropped');
        this.droppedEarlyBytes += cut;
        this.shared.clientMetrics?.overflowSeconds.inc(cut / this.bps / this.rate);
      }
      return;
    }
    const streamer = this.streamer!;
    this.writes = this.writes
      .then(() => streamer.write(chunk))
      .catch((err: Error) => {
        this.failed ??= err;
      });
  }

  private async start(): Promise<void> {
    const { protocol, externalId, speaker, encoding } = this.spec;
    try {
      this.callId = await this.shared.linker.callFor(protocol, externalId, this.spec.callTitle, this.spec.agentId);
      if (this.aborted) return;
      const streamer = new SessionStreamer({
        url: this.shared.url,
        accessKey: this.shared.accessKey,
        encoding,
        streamId: this.streamId,
        title: `${this.spec.callTitle}: ${speaker}`,
        sessionOptions: this.shared.sessionOptions,
        ...(this.callId ? { call: { callId: this.callId, speaker } } : {}),
        bufferSamples: Math.round(this.shared.bufferSeconds * this.rate),
        logger: this.log,
        metrics: this.shared.clientMetrics,
        onFull: 'drop-oldest',
      });
      this.streamer = streamer;
      streamer.on('final', (segment: FinalSegment) => {
        try {
          this.files?.append(segment);
        } catch (err) {
          this.log.error({ err }, 'could not write the transcript file');
        }
        this.onFinal?.(this, segment);
      });
      streamer.on('error', (err: Error) => this.log.warn({ err: err.message }, 'stream error'));
      const { sessionId } = await streamer.start();
      this.log = this.log.child({ sessionId, callId: this.callId });
      if (this.shared.outDir) this.files = new TranscriptFiles(this.shared.outDir, sessionId);
      this.log.info({ encoding }, 'leg streaming to its session');
      if (this.droppedEarlyBytes > 0)
        this.log.warn({ droppedSamples: this.droppedEarlyBytes / this.bps }, 'audio dropped while the session was being created');
      this.started = true;
      const queued = this.early.splice(0);
      this.earlyBytes = 0;
      this.writes = this.writes.then(async () => {
        for (const chunk of queued) await streamer.write(chunk);
      });
    } catch (err) {
      this.failed = err as Error;
      this.early.splice(0);
      this.shared.metrics?.legsFailed.inc({ protocol });
      this.log.error(
        { err: (err as Error).message, droppedSamples: this.receivedSamples },
        'could not start the session of this leg; its audio is dropped',
      );
    }
  }

  /** The PBX ended the leg: flush, close the session, write the transcript. */
  async end(): Promise<LegReport> {
    await this.startup;
    let summary: StreamSummary | null = null;
    if (this.streamer && this.started && !this.failed) {
      try {
        await this.writes;
        if (this.failed) throw this.failed;
        summary = await this.streamer.end();
        this.log.info(
          {
            transcriptionId: summary.transcriptionId,
            receivedSamples: this.receivedSamples,
            capturedSamples: summary.capturedSamples,
            acknowledgedSamples: summary.acknowledgedSamples,
            serverCapturedSamples: summary.serverCapturedSamples,
            overflowSamples: summary.overflowSamples,
            resumes: summary.resumes,
            segments: summary.segments,
          },
          'leg closed',
        );
      } catch (err) {
        this.failed ??= err as Error;
        this.shared.metrics?.legsFailed.inc({ protocol: this.spec.protocol });
        this.log.error({ err: (err as Error).message }, 'closing the session of this leg failed; it stays resumable');
        await this.streamer.abort().catch(() => undefined);
      }
    }
    try {
      this.files?.close(summary?.finals ?? []);
    } catch (err) {
      this.log.error({ err }, 'could not write the transcript files');
    }
    this.shared.metrics?.openLegs.dec({ protocol: this.spec.protocol });
    return this.report(summary);
  }

  /** Leave without closing (stop bound exceeded): the session stays PAUSED for a restart. */
  async abort(): Promise<void> {
    this.aborted = true;
    await this.streamer?.abort().catch(() => undefined);
  }

  private report(summary: StreamSummary | null): LegReport {
    return {
      protocol: this.spec.protocol,
      externalId: this.spec.externalId,
      speaker: this.spec.speaker,
      callId: this.callId,
      sessionId: summary?.sessionId ?? this.sessionId,
      transcriptionId: summary?.transcriptionId ?? null,
      receivedSamples: this.receivedSamples,
      summary,
      error: this.failed ? this.failed.message : null,
    };
  }
}
