// `scribed serve`: run the HTTP + WebSocket service until SIGTERM/SIGINT, then stop
// gracefully within the shutdown bound (open segments finalized and persisted).
import net from 'node:net';
import type { CommandModule } from 'yargs';
import { createService } from '../service.js';
import type { EngineKind } from '../engine/types.js';
import { describeStore, loadConfig, metricsTokenFrom, type ConfigInput } from '../config.js';
import { splitCidrList } from '../core/outbound-policy.js';
import { storeConfigInput, withStoreOptions, type StoreArgs } from './store-options.js';

interface ServeArgs extends StoreArgs {
  host?: string;
  port?: number;
  engine?: string;
  'model-dir'?: string;
  'max-decoders'?: number;
  'callback-allow-private'?: boolean;
  'callback-allow-cidr'?: string[];
  'callback-allow-cidr-file'?: string;
  'public-url'?: string;
  'metrics-token-file'?: string;
  'max-connections'?: number;
  'max-streams-per-account'?: number;
  'max-deferred-seconds'?: number;
  'agent-port'?: number;
  'drain-grace-ms'?: number;
  'session-idle-expiry-ms'?: number;
  'headers-timeout-ms'?: number;
  'request-timeout-ms'?: number;
  'idle-timeout-ms'?: number;
  'keep-alive-timeout-ms'?: number;
  'siprec-port'?: number;
  'siprec-account'?: string;
  'siprec-host'?: string;
  'siprec-media-address'?: string;
  'siprec-rtp-ports'?: string;
  'siprec-agent-pattern'?: string;
  'siprec-allow-cidr'?: string[];
  'siprec-max-body-bytes'?: number;
  'siprec-inactivity-timeout-s'?: number;
  'siprec-hold-timeout-s'?: number;
  'siprec-tls-port'?: number;
  'siprec-tls-cert'?: string;
  'siprec-tls-key'?: string;
  'siprec-allow-sdes-without-tls'?: boolean;
}

/** Why the service could not listen on host:port, with the way out; null for other errors. */
export function listenFailure(err: unknown, host: string, port: number): string | null {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  const other = port === 8080 ? 8081 : port + 1;
  const fix = `choose another port: SCRIBED_PORT=${other} npm start, or scribed serve --port ${other} (or stop what holds it: ss -ltnp 'sport = :${port}')`;
  if (code === 'EADDRINUSE') return `port ${port} on ${host} is already in use (another scribed, or another server); ${fix}`;
  if (code === 'EACCES') return `port ${port} on ${host} needs privileges this user lacks (ports below 1024); ${fix}`;
  if (code === 'EADDRNOTAVAIL')
    return `${host} is not an address of this host (SCRIBED_HOST / --host); use 127.0.0.1, 0.0.0.0 or one of this host's addresses`;
  return null;
}

/** Bind host:port and let go at once: a port another process holds fails here, in a
 * moment, rather than after the start-up capacity measurement (tens of seconds). Port 0
 * (any free port) cannot be taken. */
async function checkListenable(host: string, port: number): Promise<void> {
  if (port === 0) return;
  await new Promise<void>((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', (err) => {
      const why = listenFailure(err, host, port);
      reject(why ? new Error(why) : err);
    });
    probe.listen({ host, port, exclusive: true }, () => probe.close(() => resolve()));
  });
}

export const serveCommand: CommandModule<object, ServeArgs> = {
  command: 'serve',
  describe: 'run the speech-to-text service (env: SCRIBED_HOST, SCRIBED_PORT, SCRIBED_DATA_DIR, ...)',
  builder: (y) =>
    withStoreOptions(y)
      .option('host', { type: 'string', describe: 'listen address [env SCRIBED_HOST, default 127.0.0.1]' })
      .option('port', { type: 'number', describe: 'listen port [env SCRIBED_PORT, default 8080]' })
      .option('engine', { type: 'string', choices: ['pocketsphinx', 'sherpa-onnx'], describe: 'recognizer [env SCRIBED_ENGINE]' })
      .option('model-dir', { type: 'string', describe: 'model directory (required for sherpa-onnx) [env SCRIBED_MODEL_DIR]' })
      .option('max-decoders', {
        type: 'number',
        describe:
          'concurrent recognizer streams [env SCRIBED_MAX_DECODERS; default: the capacity this node measures at its first start (cores x 0.8 / CPU s per audio s, cut by memory), cached in the data dir; 4 if that fails]',
      })
      .option('callback-allow-private', {
        type: 'boolean',
        describe:
          'voice design callbacks may reach private ranges (10/8, 172.16/12, 192.168/16, 100.64/10, fc00::/7; not loopback) [env SCRIBED_CALLBACK_ALLOW_PRIVATE, default false]',
      })
      .option('callback-allow-cidr', {
        type: 'string',
        array: true,
        describe:
          'a loopback or private range callbacks may reach, e.g. 10.20.0.0/16 or 127.0.0.1/32; repeatable [env SCRIBED_CALLBACK_ALLOW_CIDRS, comma-separated]',
      })
      .option('callback-allow-cidr-file', {
        type: 'string',
        describe:
          'a file of more such CIDRs (one or more a line, # comments), read at start and again on SIGHUP, so the list changes without a restart [env SCRIBED_CALLBACK_ALLOW_CIDR_FILE]',
      })
      .option('public-url', {
        type: 'string',
        describe:
          "how browsers reach this server, e.g. https://scribed.example: the desk's login links and Origin check use it (docs/desk.md) [env SCRIBED_PUBLIC_URL, default: only the address a browser connects to directly]",
      })
      .option('metrics-token-file', {
        type: 'string',
        describe:
          'a file whose first line is the bearer token /metrics asks for (docs/operations.md) [env SCRIBED_METRICS_TOKEN or SCRIBED_METRICS_TOKEN_FILE, default: /metrics answers loopback requests only]',
      })
      // Connection bounds: docs/api.md, "Connections and timeouts".
      .option('max-streams-per-account', {
        type: 'number',
        describe:
          'cap on the live sockets one account may hold on this node at once, 0 for no cap [env SCRIBED_MAX_STREAMS_PER_ACCOUNT, default: no cap, accounts share the recognizers fairly and sockets beyond them are deferred]',
      })
      .option('max-deferred-seconds', {
        type: 'number',
        describe:
          'while every recognizer is busy, serve new sockets anyway and hold up to this many seconds of their audio (node total) until one frees; 0 refuses with ENGINE_BUSY instead [env SCRIBED_MAX_DEFERRED_SECONDS, default 600, 0 with --database-url]',
      })
      .option('drain-grace-ms', {
        type: 'number',
        describe:
          'on SIGTERM, drain first: move live calls to other nodes (or keep them until they end) for at most this long, then stop; a second SIGTERM stops at once; 0: no drain [env SCRIBED_DRAIN_GRACE_MS, default: 1800000]',
      })
      .option('session-idle-expiry-ms', {
        type: 'number',
        describe:
          'end a session with no socket and nothing stored for this long (COMPLETED, endReason session.expired); 0: never [env SCRIBED_SESSION_IDLE_EXPIRY_MS, default: 3600000, an hour]',
      })
      .option('agent-port', {
        type: 'number',
        describe:
          "answer HAProxy's agent check on this TCP port with a weight from the free recognizers (deploy/haproxy.cfg agent-check) [env SCRIBED_AGENT_PORT, default: off]",
      })
      .option('max-connections', {
        type: 'number',
        describe: 'open connections at most, sockets included [env SCRIBED_MAX_CONNECTIONS, default 1024]',
      })
      .option('headers-timeout-ms', {
        type: 'number',
        describe: 'request headers must arrive within [env SCRIBED_HEADERS_TIMEOUT_MS, default 10000]',
      })
      .option('request-timeout-ms', {
        type: 'number',
        describe: 'a whole request, body included, must arrive within [env SCRIBED_REQUEST_TIMEOUT_MS, default 600000]',
      })
      .option('idle-timeout-ms', {
        type: 'number',
        describe:
          'close a connection silent this long while the client owes a request or reading an answer [env SCRIBED_IDLE_TIMEOUT_MS, default 60000]',
      })
      .option('keep-alive-timeout-ms', {
        type: 'number',
        describe: 'close a connection idle this long between requests [env SCRIBED_KEEP_ALIVE_TIMEOUT_MS, default 72000]',
      })
      // The SIPREC recording server: docs/siprec.md, "Settings".
      .option('siprec-port', {
        type: 'number',
        describe: 'be a SIPREC recording server on this SIP port, UDP and TCP (5060 usually) [env SCRIBED_SIPREC_PORT, default: off]',
      })
      .option('siprec-account', {
        type: 'string',
        describe:
          'the account (acc_...) recorded calls belong to and are charged to; required with --siprec-port [env SCRIBED_SIPREC_ACCOUNT]',
      })
      .option('siprec-host', {
        type: 'string',
        describe: 'address the SIP and RTP sockets bind to [env SCRIBED_SIPREC_HOST, default: --host]',
      })
      .option('siprec-media-address', {
        type: 'string',
        describe:
          'the address in the SDP answer and Contact, where SBCs send RTP; required when binding to 0.0.0.0 [env SCRIBED_SIPREC_MEDIA_ADDRESS, default: the bind address]',
      })
      .option('siprec-rtp-ports', {
        type: 'string',
        describe: 'RTP port range MIN-MAX, an even port per stream [env SCRIBED_SIPREC_RTP_PORTS, default 20000-20999]',
      })
      .option('siprec-agent-pattern', {
        type: 'string',
        describe: "a regular expression over each participant's AOR and name: a match is the agent [env SCRIBED_SIPREC_AGENT_PATTERN]",
      })
      .option('siprec-allow-cidr', {
        type: 'string',
        array: true,
        describe:
          'a CIDR allowed to send SIP (the SBCs), repeatable; others get 403 [env SCRIBED_SIPREC_ALLOW_CIDRS, comma-separated; default: any]',
      })
      .option('siprec-max-body-bytes', {
        type: 'number',
        describe: 'largest SIP body (SDP plus metadata); over it 413 [env SCRIBED_SIPREC_MAX_BODY_BYTES, default 65536]',
      })
      .option('siprec-inactivity-timeout-s', {
        type: 'number',
        describe:
          'end a recording session after this long with no RTP on any stream and no SIP in its dialog (an SBC gone without BYE) [env SCRIBED_SIPREC_INACTIVITY_TIMEOUT_S, default 60]',
      })
      .option('siprec-hold-timeout-s', {
        type: 'number',
        describe: 'the same while every stream is on hold (a=inactive): only SIP counts [env SCRIBED_SIPREC_HOLD_TIMEOUT_S, default 7200]',
      })
      .option('siprec-tls-port', {
        type: 'number',
        describe:
          'also take SIP over TLS on this port (5061 usually); needs --siprec-tls-cert and --siprec-tls-key [env SCRIBED_SIPREC_TLS_PORT, default: off]',
      })
      .option('siprec-tls-cert', {
        type: 'string',
        describe: "the TLS listener's certificate chain, a PEM file, read again on SIGHUP [env SCRIBED_SIPREC_TLS_CERT]",
      })
      .option('siprec-tls-key', {
        type: 'string',
        describe: "the TLS listener's private key, a PEM file, read again on SIGHUP [env SCRIBED_SIPREC_TLS_KEY]",
      })
      .option('siprec-allow-sdes-without-tls', {
        type: 'boolean',
        describe:
          'take SRTP keys (a=crypto) offered over plain UDP or TCP, where anyone on the path reads them [env SCRIBED_SIPREC_ALLOW_SDES_WITHOUT_TLS, default: refused with 488]',
      }),
  handler: async (args) => {
    const input: ConfigInput = {
      ...storeConfigInput(args),
      host: args.host,
      port: args.port,
      engine: args.engine as EngineKind | undefined,
      modelDir: args['model-dir'],
      maxDecoders: args['max-decoders'],
      callbackAllowPrivate: args['callback-allow-private'],
      callbackAllowCidrs: args['callback-allow-cidr']?.flatMap((x) => splitCidrList(String(x))),
      callbackAllowCidrFile: args['callback-allow-cidr-file'],
      publicUrl: args['public-url'],
      metricsToken: metricsTokenFrom(undefined, args['metrics-token-file']),
      maxConnections: args['max-connections'],
      maxStreamsPerAccount: args['max-streams-per-account'],
      maxDeferredSeconds: args['max-deferred-seconds'],
      agentPort: args['agent-port'],
      drainGraceMs: args['drain-grace-ms'],
      sessionIdleExpiryMs: args['session-idle-expiry-ms'],
      headersTimeoutMs: args['headers-timeout-ms'],
      requestTimeoutMs: args['request-timeout-ms'],
      idleTimeoutMs: args['idle-timeout-ms'],
      keepAliveTimeoutMs: args['keep-alive-timeout-ms'],
      siprecFlags: {
        port: args['siprec-port'],
        account: args['siprec-account'],
        host: args['siprec-host'],
        mediaAddress: args['siprec-media-address'],
        rtpPorts: args['siprec-rtp-ports'],
        agentPattern: args['siprec-agent-pattern'],
        allowCidrs: args['siprec-allow-cidr']?.flatMap((x) => splitCidrList(String(x))),
        maxBodyBytes: args['siprec-max-body-bytes'],
        inactivityTimeoutS: args['siprec-inactivity-timeout-s'],
        holdTimeoutS: args['siprec-hold-timeout-s'],
        tlsPort: args['siprec-tls-port'],
        tlsCert: args['siprec-tls-cert'],
        tlsKey: args['siprec-tls-key'],
        allowSdesWithoutTls: args['siprec-allow-sdes-without-tls'],
      },
    };
    const { host, port } = loadConfig(input);
    await checkListenable(host, port);
    const service = await createService(input);
    let address: string;
    try {
      address = await service.listen();
    } catch (err) {
      // Taken between the check and now (during the capacity measurement).
      await service.stop().catch(() => undefined);
      const why = listenFailure(err, host, port);
      throw why ? new Error(why) : err;
    }
    service.log.info({ address, dataDir: service.config.dataDir, store: describeStore(service.config) }, 'scribed listening');
    // What a newcomer needs from the first start, in one line of words (the details above are
    // fields, for log pipelines): where it listens, what it keeps where, what it carries.
    service.log.info(
      `ready at ${address}: data in ${service.config.dataDir}, ${service.config.sharedStore ? 'shared PostgreSQL store' : 'embedded SQLite store'}, ` +
        `up to ${service.config.maxDecoders} recognizer(s) at once. Next: scribed accounts create --name NAME --json (README, "Quick start")`,
    );

    // The first signal drains (on a shared store: live calls move to other nodes, for at most
    // the drain grace; src/server/drain.ts), then stops within the shutdown bound; a second
    // signal during the drain cuts it short and stops now (nothing stored is lost: the stop
    // finalizes and persists what is left, as a stop without a drain does).
    let signals = 0;
    const stop = () => {
      const timer = setTimeout(() => {
        service.log.error('shutdown bound exceeded; exiting');
        process.exit(1);
      }, service.config.shutdownTimeoutMs);
      timer.unref();
      service.stop().then(
        () => {
          service.log.info('stopped');
          process.exit(0);
        },
        (err) => {
          service.log.error({ err }, 'shutdown failed');
          process.exit(1);
        },
      );
    };
    let begun = false;
    const begin = () => {
      if (begun) return;
      begun = true;
      service.drain().then(stop, (err: unknown) => {
        service.log.error({ err }, 'drain failed; stopping');
        stop();
      });
    };
    const onSignal = (signal: NodeJS.Signals) => {
      signals += 1;
      if (signals === 2) {
        service.log.info({ signal }, 'second signal: the drain ends now');
        service.cutDrain();
      }
      if (signals > 1) return;
      service.log.info({ signal }, 'stopping');
      begin();
    };
    process.on('SIGTERM', onSignal);
    process.on('SIGINT', onSignal);
    // `scribed drain` (POST /admin/drain) begins what the first signal begins; a signal after
    // it still counts as the first (it drains, already under way), and a second cuts it short.
    service.onDrainRequest(() => {
      service.log.info('stopping: drain asked for through /admin/drain');
      begin();
    });
    // SIGHUP reads again what can change without a restart (docs/operations.md); it never stops
    // the server (the default action would).
    process.on('SIGHUP', () => void service.reload());
  },
};
