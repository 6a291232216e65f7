// `scribed stream --channels 2`: a two-channel input (interleaved s16le at the --encoding
// rate; a file decoded by ffmpeg keeps its two channels) streamed as a call of two legs, one
// SessionStreamer per channel, each labelled with its speaker (docs/ingest.md, docs/calls.md
// "Stereo"). The call is created the gateway's way (src/gateway/call-link.ts: idempotent on a
// key derived from the stream id, so a rerun with the same --stream-id lands on the same call
// and each leg re-attaches to its own session) and the channels are split by the gateway's
// stereo demuxer (src/gateway/fork.ts), which keeps an instant split across reads whole.
import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';
import { INPUT_ENCODINGS, type InputEncodingName } from '../core/audio/encodings.js';
import { API_BASE } from '../core/protocol.js';
import { formatTimestamp } from '../core/transcript.js';
import { CallLinker } from '../gateway/call-link.js';
import { ForkDemux } from '../gateway/fork.js';
import { SessionStreamer, type FinalSegment, type StreamSummary } from '../client/session-streamer.js';
import type { ClientMetrics } from '../client/metrics.js';
import { TranscriptFiles } from '../client/transcript-files.js';
import type { AudioInput } from '../client/inputs.js';
import { pacingDelayMs, splitChunk } from '../client/pacing.js';
import { creditRetryMs } from '../client/give-up.js';
import { legTitle } from '../core/channels.js';

export interface StreamCallOptions {
  url: string;
  accessKey: string;
  encoding: InputEncodingName;
  streamId: string;
  title: string | undefined;
  speakers: string[];
  sessionOptions: Record<string, unknown>;
  bufferSeconds: number;
  onFull: 'block' | 'drop-oldest';
  connectTimeoutMs: number;
  noCreditTimeoutMs: number;
  realtime: boolean;
  out: string | undefined;
  logger: Logger;
  metrics: ClientMetrics;
}

export interface CallLegs {
  callId: string;
  legs: Array<{ speaker: string; streamer: SessionStreamer; files: TranscriptFiles | null }>;
}

function clock(ms: number): string {
  return formatTimestamp(BigInt(Math.max(0, Math.round(ms))), '.');
}

/** The stream id of one channel's leg: the call's, and the speaker. */
export function legStreamId(streamId: string, speaker: string): string {
  return `${streamId}\n${speaker}`;
}

/** Create (or find again) the call and start one session per channel. */
export async function startCall(o: StreamCallOptions): Promise<CallLegs> {
  const linker = new CallLinker({ url: o.url, accessKey: o.accessKey, logger: o.logger, connectTimeoutMs: o.connectTimeoutMs });
  const title = o.title ?? 'Untitled call';
  const callId = await linker.callFor('stream', o.streamId, title);
  if (callId === null)
    throw new Error('the server has no calls API (POST /stt/calls is 404): --channels 2 needs a server with calls (docs/calls.md)');
  const rate = INPUT_ENCODINGS[o.encoding].sampleRateHz;
  const legs: CallLegs['legs'] = [];
  for (const speaker of o.speakers) {
    const streamer = new SessionStreamer({
      url: o.url,
      accessKey: o.accessKey,
      encoding: o.encoding,
      streamId: legStreamId(o.streamId, speaker),
      title: legTitle(title, speaker),
      sessionOptions: o.sessionOptions,
      call: { callId, speaker },
      bufferSamples: Math.max(1, Math.round(o.bufferSeconds * rate)),
      logger: o.logger.child({ speaker }),
      metrics: o.metrics,
      onFull: o.onFull,
      connectTimeoutMs: o.connectTimeoutMs,
      noCreditTimeoutMs: o.noCreditTimeoutMs,
      acceptingRetryMs: creditRetryMs(o.noCreditTimeoutMs),
    });
    const leg = { speaker, streamer, files: null as TranscriptFiles | null };
    streamer.on('final', (seg: FinalSegment) => {
      if (seg.text.trim() !== '') process.stdout.write(`[${clock(seg.startMs)} --> ${clock(seg.endMs)}] ${speaker}: ${seg.text}\n`);
      leg.files?.append(seg);
    });
    streamer.on('error', (err: Error) => o.logger.warn({ speaker, err: err.message }, 'stream error'));
    legs.push(leg);
  }
  // Both legs' sessions exist before any audio is read, so neither channel waits on the other.
  const started = await Promise.all(legs.map((l) => l.streamer.start()));
  legs.forEach((l, i) => {
    if (o.out) l.files = new TranscriptFiles(path.resolve(o.out), started[i]!.sessionId);
  });
  o.logger.info(
    { callId, legs: legs.map((l, i) => ({ speaker: l.speaker, sessionId: started[i]!.sessionId })) },
    'streaming a call: one leg per channel',
  );
  return { callId, legs };
}

/** Read the interleaved input to its end, each channel to its leg; then flush and close both
 * legs and write the merged call transcript. */
export async function streamCall(
  o: StreamCallOptions,
  call: CallLegs,
  input: AudioInput,
): Promise<{ summaries: StreamSummary[]; mergedPath: string | null }> {
  const rate = INPUT_ENCODINGS[o.encoding].sampleRateHz;
  const frameBytes = 2 * call.legs.length;
  const demux = new ForkDemux(call.legs.length as 1 | 2);
  const pace = o.realtime && !input.live;
  const paceStart = Date.now();
  let instants = 0;
  for await (const chunk of input.stream as AsyncIterable<Buffer>) {
    for (const piece of pace ? splitChunk(chunk, Math.max(frameBytes, Math.round(rate / 50) * frameBytes)) : [chunk]) {
      if (pace) {
        const wait = pacingDelayMs(instants + piece.length / frameBytes, rate, Date.now() - paceStart);
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      }
      const channels = demux.push(piece);
      await Promise.all(channels.map((pcm, i) => (pcm.length > 0 ? call.legs[i]!.streamer.write(pcm) : undefined)));
      instants += piece.length / frameBytes;
    }
  }
  if (demux.pendingBytes > 0)
    o.logger.warn({ bytes: demux.pendingBytes }, 'the input ended inside a stereo sample frame; those bytes are dropped');
  await input.done.catch((err: unknown) => {
    throw new Error(`input failed: ${err instanceof Error ? err.message : String(err)}`);
  });
  const summaries = await Promise.all(call.legs.map((l) => l.streamer.end()));
  call.legs.forEach((l, i) => l.files?.close(summaries[i]!.finals));
  let mergedPath: string | null = null;
  if (o.out) {
    const res = await fetch(`${o.url}${API_BASE}/stt/calls/${call.callId}/transcript?format=txt`, {
      headers: { accessKey: o.accessKey },
      signal: AbortSignal.timeout(30_000),
    });
    if (res.ok) {
      mergedPath = path.join(path.resolve(o.out), `${call.callId}.txt`);
      fs.writeFileSync(mergedPath, await res.text(), { mode: 0o640 });
    } else {
      o.logger.warn({ status: res.status }, 'could not fetch the merged call transcript; the per-leg files are written');
    }
  }
  return { summaries, mergedPath };
}
