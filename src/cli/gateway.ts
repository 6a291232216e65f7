// `scribed gateway`: accept PBX media streams (Twilio Media Streams and mod_audio_fork/jambonz
// over WebSocket, Asterisk AudioSocket over TCP) and stream each leg of each call to a scribed
// service as a session, until SIGTERM/SIGINT; then end every leg, close its session and write
// its transcript. docs/gateway.md.
import fs from 'node:fs';
import type { CommandModule } from 'yargs';
import { pino } from 'pino';
import { ScribedError } from '../core/errors.js';
import { createLogger } from '../obs/log.js';
import { accessKeyFromEnv, gatewayTokenFromEnv, logLevelFromEnv } from '../config.js';
import { ClientMetrics } from '../client/metrics.js';
import { readAccessKey } from '../client/access-key.js';
import { Gateway } from '../gateway/gateway.js';
import { createGatewayMetrics } from '../gateway/metrics.js';
import { DEFAULT_AUDIOSOCKET_SPEAKERS } from '../gateway/audiosocket.js';
import { SPEAKER_PATTERN } from '../gateway/twilio.js';
import { parseListen } from './rtp.js';
import { sessionOptionsFrom, withSessionOptionFlags, type SessionOptionArgs } from './session-option-flags.js';

interface GatewayArgs extends SessionOptionArgs {
  url: string;
  listen: string;
  audiosocket?: string;
  out?: string;
  'access-key-file'?: string;
  'pbx-token-file'?: string;
  'audiosocket-speaker'?: string[];
  'buffer-seconds': number;
  'pending-audio-seconds': number;
  'metrics-port'?: number;
  'metrics-host': string;
  'stop-timeout-ms': number;
}

function invalid(field: string, reason: string): never {
  throw new ScribedError('VALIDATION_FAILED', `--${field}: ${reason}`, { details: { field } });
}

/** `N=NAME` pairs to a map of AudioSocket leg numbers (1-255) to speakers. */
export function parseAudioSocketSpeakers(values: string[]): Map<number, string> {
  const map = new Map(DEFAULT_AUDIOSOCKET_SPEAKERS);
  for (const v of values) {
    const m = /^(\d{1,3})=(.+)$/.exec(v);
    const n = m ? Number(m[1]) : NaN;
    if (!m || n < 1 || n > 255 || !SPEAKER_PATTERN.test(m[2]!))
      invalid('audiosocket-speaker', `expected N=NAME (N 1-255, NAME ${SPEAKER_PATTERN.source}), got ${v}`);
    map.set(n, m[2]!);
  }
  if (new Set(map.values()).size !== map.size) invalid('audiosocket-speaker', 'two legs with one speaker name');
  return map;
}

/** The PBX token: from a file (systemd credential), else env SCRIBED_GATEWAY_TOKEN, else none. */
function readPbxToken(file: string | undefined): string | undefined {
  const raw = file !== undefined ? fs.readFileSync(file, 'utf8') : gatewayTokenFromEnv();
  if (raw === undefined) return undefined;
  const token = raw.trim();
  if (!/^[\x21-\x7e]{16,256}$/.test(token)) invalid('pbx-token-file', 'the token must be 16-256 printable ASCII characters without spaces');
  return token;
}

export const gatewayCommand: CommandModule<object, GatewayArgs> = {
  command: 'gateway',
  describe: 'accept PBX media streams (Twilio, mod_audio_fork/jambonz, AudioSocket) and transcribe each leg of each call',
  builder: (y) =>
    withSessionOptionFlags(y)
      .option('url', { type: 'string', demandOption: true, describe: 'scribed service, http(s)://host:port' })
      .option('listen', { type: 'string', demandOption: true, describe: 'WebSocket listener HOST:PORT (paths /twilio and /fork)' })
      .option('audiosocket', { type: 'string', describe: 'Asterisk AudioSocket TCP listener HOST:PORT' })
      .option('out', { type: 'string', describe: 'directory for <sessionId>.jsonl and <sessionId>.txt transcripts of every leg' })
      .option('access-key-file', { type: 'string', describe: 'file holding the scribed access key [else env SCRIBED_ACCESS_KEY]' })
      .option('pbx-token-file', {
        type: 'string',
        describe:
          'file holding the secret PBXs present (Authorization header, or Twilio customParameters gatewayToken) [else env SCRIBED_GATEWAY_TOKEN; none: no check]',
      })
      .option('audiosocket-speaker', {
        type: 'string',
        array: true,
        describe: 'AudioSocket leg number (last UUID byte) to speaker, N=NAME (repeatable; default 1=caller 2=callee)',
      })
      .option('buffer-seconds', { type: 'number', default: 60, describe: 'unacknowledged audio kept per leg for re-sending after a fault' })
      .option('pending-audio-seconds', {
        type: 'number',
        default: 30,
        describe: 'audio held per leg while its session cannot be created yet (server down)',
      })
      .option('metrics-port', { type: 'number', describe: 'serve Prometheus metrics on this port (GET /metrics)' })
      .option('metrics-host', { type: 'string', default: '127.0.0.1', describe: 'address for --metrics-port' })
      .option('stop-timeout-ms', { type: 'number', default: 10_000, describe: 'on SIGTERM, how long to wait for sessions to close' }),
  handler: async (args) => {
    const log = createLogger({ level: logLevelFromEnv(), destination: pino.destination(2) }).child({ component: 'gateway' });
    const listen = parseListen(args.listen);
    let audioSocket: { host: string; port: number } | undefined;
    try {
      audioSocket = args.audiosocket !== undefined ? parseListen(args.audiosocket) : undefined;
    } catch (err) {
      invalid('audiosocket', (err as Error).message.replace(/^--listen: /, ''));
    }
    if (!/^https?:\/\//.test(args.url)) invalid('url', 'must be http(s)://host:port');
    for (const [flag, v] of [
      ['buffer-seconds', args['buffer-seconds']],
      ['pending-audio-seconds', args['pending-audio-seconds']],
      ['stop-timeout-ms', args['stop-timeout-ms']],
    ] as const) {
      if (!Number.isFinite(v) || v <= 0) invalid(flag, 'must be a positive number');
    }
    const speakers = parseAudioSocketSpeakers(args['audiosocket-speaker'] ?? []);
    let sessionOptions: Record<string, unknown>;
    try {
      sessionOptions = sessionOptionsFrom(args);
    } catch (err) {
      invalid('session-option', (err as Error).message);
    }
    const accessKey = readAccessKey(args['access-key-file'], { SCRIBED_ACCESS_KEY: accessKeyFromEnv() });
    const pbxToken = readPbxToken(args['pbx-token-file']);

    const clientMetrics = new ClientMetrics();
    const metrics = createGatewayMetrics(clientMetrics.registry);
    const metricsServer = args['metrics-port'] !== undefined ? await clientMetrics.serve(args['metrics-port'], args['metrics-host']) : null;
    if (metricsServer) log.info({ port: metricsServer.port }, 'metrics listening');

    const gateway = new Gateway({
      url: args.url.replace(/\/+$/, ''),
      accessKey,
      listen,
      audioSocket,
      pbxToken,
      audioSocketSpeakers: speakers,
      outDir: args.out,
      bufferSeconds: args['buffer-seconds'],
      pendingAudioSeconds: args['pending-audio-seconds'],
      sessionOptions,
      logger: log,
      clientMetrics,
      metrics,
    });
    gateway.on('final', (f) => {
      if (f.segment.text.trim()) process.stdout.write(`${f.externalId} ${f.speaker} ${f.segment.text.trim()}\n`);
    });
    const address = await gateway.start();
    if (pbxToken === undefined)
      log.warn(
        'no PBX token (--pbx-token-file or SCRIBED_GATEWAY_TOKEN): any client that reaches the listeners can stream; keep them on a private address',
      );
    log.info({ ...address, url: args.url, out: args.out ?? null, authentication: pbxToken !== undefined }, 'scribed gateway listening');

    let signalled = false;
    const onSignal = (signal: NodeJS.Signals) => {
      if (signalled) return;
      signalled = true;
      log.info({ signal, legs: gateway.activeLegs }, 'stopping: ending calls and closing their sessions');
      const timer = setTimeout(() => {
        log.error('stop bound exceeded; leaving the remaining sessions paused for a restart to resume');
        void gateway.abortAll().finally(() => process.exit(1));
      }, args['stop-timeout-ms']);
      timer.unref();
      gateway
        .stop()
        .then(async (reports) => {
          await metricsServer?.close();
          log.info({ legs: reports.length, failed: reports.filter((r) => r.error !== null).length }, 'stopped');
          process.exit(0);
        })
        .catch((err: unknown) => {
          log.error({ err }, 'stop failed');
          process.exit(1);
        });
    };
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
  },
};
