// `scribed rtp`: receive RTP on a UDP port and stream every call to a scribed service, one
// session per stream (SSRC and source), until SIGTERM/SIGINT; then end every stream, close
// each session and write its final transcript. docs/rtp.md describes the behaviour.
import net from 'node:net';
import type { CommandModule } from 'yargs';
import { pino } from 'pino';
import { ScribedError } from '../core/errors.js';
import { createLogger } from '../obs/log.js';
import { accessKeyFromEnv, logLevelFromEnv } from '../config.js';
import { ClientMetrics } from '../client/metrics.js';
import { readAccessKey } from '../client/access-key.js';
import { giveUpOptions, handleStopSignals, withGiveUpFlags, type GiveUpArgs } from '../client/give-up.js';
import { createRtpMetrics } from '../rtp/metrics.js';
import { buildPayloadTypeMap } from '../rtp/payload-types.js';
import { DEFAULT_PENDING_AUDIO_SECONDS, RtpIngest } from '../rtp/ingest.js';
import { JITTER_DEFAULTS } from '../rtp/jitter-buffer.js';
import { sessionOptionsFrom, withSessionOptionFlags, type SessionOptionArgs } from './session-option-flags.js';

interface RtpArgs extends SessionOptionArgs, GiveUpArgs {
  listen: string;
  url: string;
  out?: string;
  'payload-type'?: string[];
  'idle-timeout-ms': number;
  'jitter-delay-ms': number;
  'conceal-ms': number;
  'rtcp-port'?: string;
  'max-streams': number;
  'buffer-seconds': number;
  'pending-audio-seconds': number;
  'metrics-port'?: number;
  'metrics-host': string;
  'access-key-file'?: string;
}

function invalid(field: string, reason: string): never {
  throw new ScribedError('VALIDATION_FAILED', `--${field}: ${reason}`, { details: { field } });
}

/** `HOST:PORT` or `[V6]:PORT`. */
export function parseListen(value: string): { host: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:]+)):(\d{1,5})$/.exec(value);
  if (!m) invalid('listen', 'expected HOST:PORT, e.g. 127.0.0.1:40000 or [::1]:40000');
  const host = m[1] ?? m[2]!;
  const port = Number(m[3]);
  if (!net.isIP(host)) invalid('listen', `${host} is not an IP address`);
  if (port > 65535) invalid('listen', 'port must be 0-65535');
  return { host, port };
}

export const rtpCommand: CommandModule<object, RtpArgs> = {
  command: 'rtp',
  describe: 'receive RTP (PCMU, PCMA, L16) on a UDP port and transcribe each stream as a session',
  builder: (y) =>
    withGiveUpFlags(withSessionOptionFlags(y), { session: "a call's session", stop: 'ending the streams and closing their sessions' })
      .option('listen', { type: 'string', demandOption: true, describe: 'UDP address to receive RTP on, HOST:PORT (RTCP on PORT+1)' })
      .option('url', { type: 'string', demandOption: true, describe: 'scribed service, http(s)://host:port' })
      .option('out', { type: 'string', describe: 'directory for <sessionId>.jsonl and <sessionId>.txt transcripts' })
      .option('payload-type', {
        type: 'string',
        array: true,
        describe: 'map a payload type: N=l16/RATE, N=pcmu, N=pcma (repeatable; 0, 8, 11 are built in)',
      })
      .option('idle-timeout-ms', { type: 'number', default: 5000, describe: 'end a stream after this long without packets' })
      .option('jitter-delay-ms', {
        type: 'number',
        default: JITTER_DEFAULTS.maxDelayMs,
        describe: 'how long a packet waits for a missing predecessor before it is declared lost',
      })
      .option('conceal-ms', {
        type: 'number',
        default: 0,
        describe: 'fill up to this much of each loss by repeating the audio before it (0: silence only)',
      })
      .option('rtcp-port', {
        type: 'string',
        describe: 'RTCP port, or "none" (default: listen port + 1; RTCP muxed on the RTP port is always read)',
      })
      .option('max-streams', {
        type: 'number',
        default: 64,
        describe: 'most concurrent streams; packets of further streams are dropped and counted',
      })
      .option('buffer-seconds', {
        type: 'number',
        default: 60,
        describe: 'unacknowledged audio kept per stream for re-sending after a fault',
      })
      .option('pending-audio-seconds', {
        type: 'number',
        default: DEFAULT_PENDING_AUDIO_SECONDS,
        describe:
          'audio held per stream while its session cannot be created yet (server down); the oldest beyond it is dropped and counted',
      })
      .option('metrics-port', { type: 'number', describe: 'serve Prometheus metrics on this port (GET /metrics)' })
      .option('metrics-host', { type: 'string', default: '127.0.0.1', describe: 'address for --metrics-port' })
      .option('access-key-file', { type: 'string', describe: 'file holding the API key [else env SCRIBED_ACCESS_KEY]' }),
  handler: async (args) => {
    const log = createLogger({ level: logLevelFromEnv(), destination: pino.destination(2) }).child({ component: 'rtp' });
    const { host, port } = parseListen(args.listen);
    if (!/^https?:\/\//.test(args.url)) invalid('url', 'must be http(s)://host:port');
    for (const [flag, v] of [
      ['idle-timeout-ms', args['idle-timeout-ms']],
      ['jitter-delay-ms', args['jitter-delay-ms']],
      ['max-streams', args['max-streams']],
      ['buffer-seconds', args['buffer-seconds']],
      ['pending-audio-seconds', args['pending-audio-seconds']],
    ] as const) {
      if (!Number.isFinite(v) || v <= 0) invalid(flag, 'must be a positive number');
    }
    if (!Number.isFinite(args['conceal-ms']) || args['conceal-ms'] < 0 || args['conceal-ms'] > 1000)
      invalid('conceal-ms', 'must be 0 to 1000');
    let rtcpPort: number | null | undefined;
    if (args['rtcp-port'] === 'none') rtcpPort = null;
    else if (args['rtcp-port'] !== undefined) {
      rtcpPort = Number(args['rtcp-port']);
      if (!Number.isInteger(rtcpPort) || rtcpPort < 0 || rtcpPort > 65535) invalid('rtcp-port', 'must be a port or "none"');
    }
    let bounds: ReturnType<typeof giveUpOptions>;
    try {
      bounds = giveUpOptions(args);
    } catch (err) {
      const m = /^--([a-z-]+): (.*)$/.exec((err as Error).message)!;
      invalid(m[1]!, m[2]!);
    }
    const payloadTypes = buildPayloadTypeMap(args['payload-type'] ?? []);
    const accessKey = readAccessKey(args['access-key-file'], { SCRIBED_ACCESS_KEY: accessKeyFromEnv() });
    let sessionOptions: Record<string, unknown>;
    try {
      sessionOptions = sessionOptionsFrom(args);
    } catch (err) {
      invalid('session-option', (err as Error).message);
    }

    const clientMetrics = new ClientMetrics();
    const rtpMetrics = createRtpMetrics(clientMetrics.registry);
    const metricsServer = args['metrics-port'] !== undefined ? await clientMetrics.serve(args['metrics-port'], args['metrics-host']) : null;
    if (metricsServer) log.info({ port: metricsServer.port }, 'metrics listening');

    const ingest = new RtpIngest({
      host,
      port,
      rtcpPort,
      payloadTypes,
      idleTimeoutMs: args['idle-timeout-ms'],
      maxStreams: args['max-streams'],
      jitter: { maxDelayMs: args['jitter-delay-ms'], concealMs: args['conceal-ms'] },
      url: args.url,
      accessKey,
      outDir: args.out,
      bufferSeconds: args['buffer-seconds'],
      pendingAudioSeconds: args['pending-audio-seconds'],
      sessionOptions,
      connectTimeoutMs: bounds.connectTimeoutMs,
      noCreditTimeoutMs: bounds.noCreditTimeoutMs,
      logger: log,
      clientMetrics,
      rtpMetrics,
    });
    ingest.on('final', ({ sessionId, segment }) => {
      if (segment.text.trim()) process.stdout.write(`${sessionId} ${segment.text.trim()}\n`);
    });
    const address = await ingest.start();
    log.info({ ...address, url: args.url, out: args.out ?? null }, 'scribed rtp listening');

    // The stop rules of `scribed stream` (src/client/give-up.ts): the first signal ends every
    // stream and closes its session within --stop-timeout-ms; calls whose session was never
    // created are given up at once; a second signal leaves without closing.
    handleStopSignals({
      stopTimeoutMs: bounds.stopTimeoutMs,
      onFirst: (signal) => {
        log.info(
          { signal, sessions: ingest.activeSessions, stopTimeoutMs: bounds.stopTimeoutMs },
          'stopping: ending streams and closing sessions',
        );
        ingest
          .stop()
          .then(async (reports) => {
            await metricsServer?.close();
            const failed = reports.filter((r) => r.error !== null);
            log.info(
              { sessions: reports.length, failed: failed.length, givenUp: reports.filter((r) => r.givenUp !== null).length },
              'stopped',
            );
            process.exit(0);
          })
          .catch((err: unknown) => {
            log.error({ err }, 'stop failed');
            process.exit(1);
          });
      },
      onBoundExceeded: () => {
        log.error(
          { stopTimeoutMs: bounds.stopTimeoutMs },
          'stop bound exceeded; leaving the remaining sessions paused for a restart to resume',
        );
        void ingest.abortAll().finally(() => process.exit(1));
      },
      onSecond: (signal) => {
        log.warn({ signal }, 'second signal: leaving without closing (the sessions stay paused and resumable)');
        void ingest.abortAll().finally(() => process.exit(130));
      },
    });
  },
};
