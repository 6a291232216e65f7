// `scribed stream`: capture or read audio and stream it to a scribed server with
// SessionStreamer; finals go to stdout (partials with --partials) and, with --out, to
// `<sessionId>.jsonl` / `<sessionId>.txt`. Messages to the user are plain lines on stderr; the
// log goes there too, as JSON off a terminal and readable in one (stream-log.ts). docs/ingest.md.
import fs from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import type { CommandModule } from 'yargs';
import { INPUT_ENCODING_NAMES, INPUT_ENCODINGS, type InputEncodingName } from '../core/audio/encodings.js';
import { formatTimestamp } from '../core/transcript.js';
import { FirstSecondsCheck, type Implausibility } from '../core/audio/sniff.js';
import { SessionStreamer, type FinalSegment, type PartialSegment } from '../client/session-streamer.js';
import { ClientMetrics, serveMetrics } from '../client/metrics.js';
import { TranscriptFiles } from '../client/transcript-files.js';
import { RAW_EXTENSIONS, openInput } from '../client/inputs.js';
import { readAccessKey } from '../client/access-key.js';
import { pacingDelayMs, splitChunk } from '../client/pacing.js';
import { creditRetryMs, giveUpOptions, handleStopSignals, withGiveUpFlags, type GiveUpArgs } from '../client/give-up.js';
import { streamLog } from '../client/stream-log.js';
import { accessKeyFromEnv, logLevelFromEnv } from '../config.js';
import { fileTitle } from '../client/file-title.js';
import { judgeFirstSeconds } from '../client/encoding-check.js';
import { sessionOptionsFrom, withSessionOptionFlags, type SessionOptionArgs } from './session-option-flags.js';
import { DEFAULT_CHANNEL_SPEAKERS, parseChannelSpeakersFlag } from '../core/channels.js';
import { ACCEPTED_FORMATS } from '../batch/audio.js';
import { runFfprobe } from '../media/probe.js';
import { chooseFileEncoding } from '../core/audio/file-encoding.js';
import { startCall, streamCall, type CallLegs, type StreamCallOptions } from './stream-call.js';

interface StreamArgs extends SessionOptionArgs, GiveUpArgs {
  url: string;
  input: string;
  encoding?: string;
  'force-encoding'?: boolean;
  title?: string;
  out?: string;
  realtime?: boolean;
  partials?: boolean;
  'buffer-seconds': number;
  'metrics-port'?: number;
  'access-key-file'?: string;
  'stream-id'?: string;
  'on-full'?: string;
  recorder?: string;
  device?: string;
  'log-level'?: string;
  channels?: number;
  'channel-speakers'?: string;
  'ignore-encoding-check'?: boolean;
}

function clock(ms: number): string {
  return formatTimestamp(BigInt(Math.max(0, Math.round(ms))), '.');
}

/** The session encoding and channels: from the flags for stdin, the microphone and raw files
 * (no header to read: --encoding is required); for other files from their header, an
 * --encoding that would upsample the file refused unless --force-encoding (core/audio/file-encoding.ts). */
async function chooseEncoding(
  args: StreamArgs,
): Promise<{ encoding: InputEncodingName; channels: 1 | 2; fileChannels: number } | { refuse: string }> {
  const requested = args.encoding as InputEncodingName | undefined;
  const channelsFlag = args.channels === undefined ? undefined : args.channels === 2 ? 2 : 1;
  const device = args.input === '-' || args.input === 'mic';
  if (!device && !fs.existsSync(args.input)) return { refuse: `input file not found: ${args.input}` };
  const headerless = device || RAW_EXTENSIONS.includes(path.extname(args.input).toLowerCase());
  if (headerless) {
    if (requested === undefined)
      return {
        refuse: `--encoding is required for ${args.input === '-' ? 'stdin' : args.input === 'mic' ? 'the microphone' : `${args.input} (raw audio has no header to read it from)`}: run \`scribed stream --help\` for the encodings`,
      };
    return { encoding: requested, channels: channelsFlag ?? 1, fileChannels: 1 };
  }
  const probed = await runFfprobe(path.resolve(args.input), ACCEPTED_FORMATS, 15_000).catch(() => null);
  const stream = probed?.streams?.find((s) => s.codec_type === 'audio');
  const sampleRateHz = Number(stream?.sample_rate);
  // Not probed (ffmpeg decodes it, or fails later with its own message): the flags as given.
  if (!stream || !Number.isFinite(sampleRateHz) || sampleRateHz <= 0) {
    if (requested === undefined) return { refuse: `could not read the sample rate of ${args.input}: give --encoding` };
    return { encoding: requested, channels: channelsFlag ?? 1, fileChannels: 1 };
  }
  const file = { sampleRateHz, channels: stream.channels ?? 1, codec: stream.codec_name ?? '' };
  const choice = chooseFileEncoding(args.input, file, requested, channelsFlag, args['force-encoding'] === true);
  return 'refuse' in choice ? choice : { ...choice, fileChannels: file.channels };
}

export const streamCommand: CommandModule<object, StreamArgs> = {
  command: 'stream',
  describe: 'stream audio (stdin, a file or the microphone) to a scribed server and print the transcript',
  builder: (y) =>
    withGiveUpFlags(withSessionOptionFlags(y), { session: 'the session', stop: 'flushing and closing' })
      .option('url', { type: 'string', demandOption: true, describe: 'server base URL, http(s)://host:port' })
      .option('input', {
        type: 'string',
        demandOption: true,
        describe: "'-' (stdin, raw audio in --encoding), a file (wav, mp3, m4a, flac, ... or raw .ulaw/.raw/.pcm), or 'mic'",
      })
      .option('encoding', {
        type: 'string',
        choices: [...INPUT_ENCODING_NAMES],
        describe: 'session input encoding (files are decoded to it) [files: read from the file; stdin, mic and raw files: required]',
      })
      .option('force-encoding', {
        type: 'boolean',
        describe:
          'stream a file in --encoding even when that upsamples it (refused by default, exit 2: upsampled telephone audio is heard as nonsense)',
      })
      .option('title', { type: 'string', describe: 'History title of the session' })
      .option('out', { type: 'string', describe: 'directory for <sessionId>.jsonl and <sessionId>.txt' })
      .option('realtime', { type: 'boolean', describe: 'pace file input at real time (default: as fast as the server acknowledges)' })
      .option('partials', { type: 'boolean', describe: 'print partial results too' })
      .option('buffer-seconds', { type: 'number', default: 60, describe: 'bound of the unacknowledged-audio buffer, seconds' })
      .option('metrics-port', { type: 'number', describe: 'serve Prometheus metrics on 127.0.0.1:PORT/metrics' })
      .option('access-key-file', { type: 'string', describe: 'file holding the access key [else env SCRIBED_ACCESS_KEY]' })
      .option('stream-id', {
        type: 'string',
        describe: 'stable id: a restarted client with the same id re-attaches to its session (default: random)',
      })
      .option('on-full', {
        type: 'string',
        choices: ['block', 'drop-oldest'],
        describe: 'when the buffer is full: wait (default for stdin/files) or drop the oldest audio (default for mic)',
      })
      .option('recorder', { type: 'string', choices: ['sox', 'arecord', 'rec'], describe: 'microphone recorder program [default sox]' })
      .option('device', { type: 'string', describe: 'microphone device (AUDIODEV for sox, -D for arecord)' })
      .option('log-level', { type: 'string', describe: 'pino level for stderr logs [env SCRIBED_LOG_LEVEL, default info]' })
      .option('channels', {
        type: 'number',
        choices: [1, 2],
        describe:
          '2: the input is stereo (raw: interleaved 16-bit PCM; files keep both channels), each channel streamed as a leg of one call [default 1; a file without --encoding: its own channels]',
      })
      .option('channel-speakers', {
        type: 'string',
        describe: 'with --channels 2: the speakers of channel 0 and 1 [default agent,customer]',
      })
      .option('ignore-encoding-check', {
        type: 'boolean',
        describe: 'stream a file or stdin whose first seconds look like another encoding than --encoding (refused by default, exit 2)',
      }),
  handler: async (args) => {
    const out = streamLog({ level: args['log-level'] ?? logLevelFromEnv(), service: 'scribed-stream', prefix: 'scribed stream' });
    const logger = out.logger;
    const chosen = await chooseEncoding(args);
    if ('refuse' in chosen) {
      process.stderr.write(`${chosen.refuse}\n`);
      process.exit(2);
    }
    const { encoding, channels, fileChannels } = chosen;
    const rate = INPUT_ENCODINGS[encoding].sampleRateHz;
    const bps = INPUT_ENCODINGS[encoding].bytesPerSample;
    let accessKey: string;
    let bounds: ReturnType<typeof giveUpOptions>;
    let speakers = [...DEFAULT_CHANNEL_SPEAKERS];
    try {
      if (args['channel-speakers'] !== undefined) {
        if (channels !== 2) throw new Error('--channel-speakers applies only with --channels 2');
        speakers = parseChannelSpeakersFlag(args['channel-speakers']);
      }
      if (channels === 2 && bps !== 2) throw new Error(`--channels 2 takes 16-bit PCM (a pcm_s16le_* --encoding), not ${encoding}`);
      if (channels === 2 && args.input === 'mic') throw new Error('--channels 2 reads stdin or a file, not the microphone');
      bounds = giveUpOptions(args);
      accessKey = readAccessKey(args['access-key-file'], { SCRIBED_ACCESS_KEY: accessKeyFromEnv() });
    } catch (err) {
      process.stderr.write(`${(err as Error).message}\n`);
      process.exit(2);
    }
    const input = openInput(args.input, encoding, { recorder: args.recorder, device: args.device, channels });
    // A file's History row is named after the file unless --title says otherwise; stdin and
    // the microphone keep the server's default.
    const title = args.title ?? (input.kind === 'raw-file' || input.kind === 'ffmpeg' ? fileTitle(args.input) : undefined);
    const metrics = new ClientMetrics();
    const metricsServer = args['metrics-port'] === undefined ? null : await serveMetrics(metrics, args['metrics-port']);
    if (metricsServer) logger.info({ port: metricsServer.port }, 'metrics on /metrics');

    // A stereo file streamed as one channel is mixed down: two parties talking over each other
    // come out as neither's words. Said once, before streaming (docs/ingest.md).
    if (channels === 1 && input.kind === 'ffmpeg') {
      if (fileChannels >= 2) {
        out.tell(
          'warn',
          `${args.input} has ${fileChannels} channels; they are mixed down to one. If each channel is one party (agent and customer), run with --channels 2`,
          { channels: fileChannels },
        );
      }
    }

    const cpu0 = process.cpuUsage();
    const t0 = Date.now();
    const streamer = new SessionStreamer({
      url: args.url.replace(/\/+$/, ''),
      accessKey,
      encoding,
      streamId: args['stream-id'] ?? randomUUID(),
      title,
      sessionOptions: sessionOptionsFrom(args),
      bufferSamples: Math.max(1, Math.round(args['buffer-seconds'] * rate)),
      logger,
      metrics,
      onFull: (args['on-full'] as 'block' | 'drop-oldest' | undefined) ?? (input.live ? 'drop-oldest' : 'block'),
      connectTimeoutMs: bounds.connectTimeoutMs,
      noCreditTimeoutMs: bounds.noCreditTimeoutMs,
      acceptingRetryMs: creditRetryMs(bounds.noCreditTimeoutMs),
    });
    let files: TranscriptFiles | null = null;
    streamer.on('final', (seg: FinalSegment) => {
      if (seg.text.trim() !== '') process.stdout.write(`[${clock(seg.startMs)} --> ${clock(seg.endMs)}] ${seg.text}\n`);
      files?.append(seg);
    });
    if (args.partials) streamer.on('partial', (p: PartialSegment) => process.stdout.write(`~ [${clock(p.startMs)}] ${p.text}\n`));
    streamer.on('error', (err: Error) => noteStreamError(err));
    // Frames refused for want of Characters come by the dozen while the client waits for
    // credit (the frames in flight, again at each retry): said once, in one line.
    let toldNoCredit = false;
    const noteStreamError = (err: Error) => {
      const code = (err as { code?: unknown }).code;
      if (code !== 'INSUFFICIENT_CHARACTERS' && code !== 'NOT_ACCEPTING') {
        logger.warn({ err: err.message }, 'stream error');
        return;
      }
      logger.debug({ err: err.message }, 'stream error');
      if (toldNoCredit) return;
      toldNoCredit = true;
      out.tell(
        'warn',
        `the account has no Characters left: waiting up to ${Math.round(bounds.noCreditTimeoutMs / 1000)} s (--credit-timeout-ms) for an operator to add some (\`scribed accounts credit\`)`,
      );
    };

    let started = false;
    let leaving = false;
    /** With --channels 2, the call's legs once they exist (each a streamer of its own). */
    let call: CallLegs | null = null;
    const abortAll = (): Promise<unknown> => (call ? Promise.all(call.legs.map((l) => l.streamer.abort())) : streamer.abort());
    const leave = (message: string) => {
      if (leaving) return;
      leaving = true;
      out.tell('error', message);
      void abortAll().finally(() => process.exit(1));
    };
    // The first signal ends the input (its end is then flushed and the session closed) and
    // the process within --stop-timeout-ms, whatever the server does.
    handleStopSignals({
      stopTimeoutMs: bounds.stopTimeoutMs,
      onFirst: (signal) => {
        input.stop();
        if (!started) {
          leave(`stopped by ${signal} before the session was created: nothing was sent`);
          return;
        }
        logger.info({ signal, stopTimeoutMs: bounds.stopTimeoutMs }, 'stopping: input closed, flushing and closing the session');
      },
      onBoundExceeded: (signal) =>
        leave(
          `could not flush and close within ${bounds.stopTimeoutMs} ms of ${signal}: audio not yet acknowledged was not sent; the session stays paused (run again with the same --stream-id to continue it)`,
        ),
      onSecond: (signal) => {
        logger.warn({ signal }, 'second signal: leaving without closing (the session stays resumable)');
        void abortAll().finally(() => process.exit(130));
      },
    });

    // What the input really is, before a session exists: a container or a WAV in another
    // encoding is refused (exit 2, as a wrong flag), a WAV in --encoding is read past its header.
    let head;
    try {
      head = await input.head;
    } catch (err) {
      head = null; // the input failed: reading it below reports how
      logger.debug({ err: (err as Error).message }, 'input failed before its first bytes were checked');
    }
    if (head?.action === 'refuse') {
      out.tell('error', head.message, { input: input.kind });
      input.stop();
      await metricsServer?.close();
      process.exit(2);
    }
    if (head?.action === 'strip-wav')
      logger.info(
        { dataOffset: head.dataOffset, dataBytes: head.dataBytes },
        'the input is a WAV file in --encoding: its header is skipped',
      );
    if (channels === 2) {
      const callOptions: StreamCallOptions = {
        url: args.url.replace(/\/+$/, ''),
        accessKey,
        encoding,
        streamId: args['stream-id'] ?? randomUUID(),
        title,
        speakers,
        sessionOptions: sessionOptionsFrom(args),
        bufferSeconds: args['buffer-seconds'],
        onFull: (args['on-full'] as 'block' | 'drop-oldest' | undefined) ?? 'block',
        connectTimeoutMs: bounds.connectTimeoutMs,
        noCreditTimeoutMs: bounds.noCreditTimeoutMs,
        realtime: args.realtime === true,
        out: args.out,
        logger,
        metrics,
      };
      try {
        call = await startCall(callOptions);
        started = true;
        const { summaries, mergedPath } = await streamCall(callOptions, call, input);
        logger.info(
          {
            callId: call.callId,
            legs: summaries.map((s, i) => ({
              speaker: call!.legs[i]!.speaker,
              sessionId: s.sessionId,
              transcriptionId: s.transcriptionId,
              capturedSamples: s.capturedSamples,
              acknowledgedSamples: s.acknowledgedSamples,
              overflowSamples: s.overflowSamples,
              resumes: s.resumes,
              segments: s.segments,
              out: call!.legs[i]!.files ? [call!.legs[i]!.files!.jsonlPath, call!.legs[i]!.files!.txtPath] : undefined,
            })),
            merged: mergedPath ?? undefined,
            wallSeconds: (Date.now() - t0) / 1000,
          },
          'stream finished',
        );
        await metricsServer?.close();
        process.exit(summaries.some((s) => s.overflowSamples > 0) ? 3 : 0);
      } catch (err) {
        // The legs are left open (PAUSED): rerun with the same --stream-id to continue them.
        out.tell('error', (err as Error).message, { err: (err as Error).message }, 'stream failed');
        input.stop();
        await abortAll().catch(() => undefined);
        await metricsServer?.close();
        process.exit(1);
      }
    }
    // The first seconds are judged once: likely the wrong encoding (mu-law read as PCM and
    // back), silence or all clipping. A file or stdin is judged before the session exists, and
    // a wrong encoding refused there (exit 2) unless --ignore-encoding-check; the microphone,
    // recorded in --encoding, only gets the warning, as it streams.
    const judged = (verdict: Implausibility | null | undefined) => {
      if (!verdict) return;
      out.tell('warn', verdict.message, {
        check: verdict.kind,
        likelyEncoding: verdict.kind === 'wrong-encoding' ? verdict.likely : undefined,
        stats: verdict.declared,
      });
    };
    input.done.catch(() => undefined);
    let chunks = input.stream as AsyncIterable<Buffer>;
    const firstSeconds = new FirstSecondsCheck(encoding);
    if (!input.live) {
      const ahead = await judgeFirstSeconds(chunks, encoding);
      chunks = ahead.chunks;
      if (ahead.verdict?.kind === 'wrong-encoding' && !args['ignore-encoding-check']) {
        out.tell(
          'error',
          `${ahead.verdict.message} Nothing was sent and no session was created: run again with the right --encoding, or with --ignore-encoding-check to stream it as it is`,
          {
            check: ahead.verdict.kind,
            likelyEncoding: ahead.verdict.likely,
            stats: ahead.verdict.declared,
          },
        );
        input.stop();
        await metricsServer?.close();
        process.exit(2);
      }
      judged(ahead.verdict);
    }

    try {
      const { sessionId } = await streamer.start();
      started = true;
      if (args.out) files = new TranscriptFiles(path.resolve(args.out), sessionId);
      logger.info({ sessionId, input: input.kind }, 'streaming');
      const pace = args.realtime && !input.live;
      const paceStart = Date.now();
      let samples = 0;
      for await (const chunk of chunks) {
        // 20 ms pieces when pacing, so real-time output is smooth.
        for (const piece of pace ? splitChunk(chunk, Math.max(bps, Math.round(rate / 50) * bps)) : [chunk]) {
          if (pace) {
            const wait = pacingDelayMs(samples + piece.length / bps, rate, Date.now() - paceStart);
            if (wait > 0) await new Promise((r) => setTimeout(r, wait));
          }
          if (input.live) judged(firstSeconds.add(piece));
          await streamer.write(piece);
          samples += piece.length / bps;
        }
      }
      if (input.live) judged(firstSeconds.finish());
      await input.done.catch((err: unknown) => {
        throw new Error(`input failed: ${err instanceof Error ? err.message : String(err)}`);
      });
      const summary = await streamer.end();
      files?.close(summary.finals);
      const cpu = process.cpuUsage(cpu0);
      const audioSeconds = summary.capturedThisRun / rate;
      const cpuSeconds = (cpu.user + cpu.system) / 1e6;
      logger.info(
        {
          sessionId: summary.sessionId,
          transcriptionId: summary.transcriptionId,
          capturedSamples: summary.capturedSamples,
          acknowledgedSamples: summary.acknowledgedSamples,
          serverCapturedSamples: summary.serverCapturedSamples,
          overflowSamples: summary.overflowSamples,
          gapSamples: summary.gapSamples,
          reconnects: summary.reconnects,
          resumes: summary.resumes,
          segments: summary.segments,
          audioSeconds,
          wallSeconds: (Date.now() - t0) / 1000,
          cpuSeconds,
          cpuSecondsPerAudioSecond: audioSeconds > 0 ? cpuSeconds / audioSeconds : null,
          out: files ? [files.jsonlPath, files.txtPath] : undefined,
        },
        'stream finished',
      );
      if (out.terminal) {
        process.stderr.write(
          `scribed stream: finished: ${audioSeconds.toFixed(1)} s of audio, ${summary.segments} segments, session ${summary.sessionId}${files ? `, transcript in ${files.txtPath}` : ''}\n`,
        );
      }
      await metricsServer?.close();
      process.exit(summary.overflowSamples > 0 ? 3 : 0);
    } catch (err) {
      // The session is left open (PAUSED): rerun with the same --stream-id to continue it.
      out.tell('error', (err as Error).message, { err: (err as Error).message }, 'stream failed');
      input.stop();
      await streamer.abort().catch(() => undefined);
      await metricsServer?.close();
      process.exit(1);
    }
  },
};
