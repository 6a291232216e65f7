// Structured logs. Credentials never reach a log line:
// - header values and fields named like a secret are redacted by path (REDACT_PATHS);
// - request URLs are logged through redactUrl (src/core/redact.ts): secret-named query
//   values replaced, credential shapes scrubbed wherever they sit;
// - and, whatever else a line carries (an error message echoing a URL or a body, a field a
//   future change adds), every line is scrubbed of credential shapes, percent-encoded or not,
//   just before it is written (pino's streamWrite hook).
//
// Where the lines go decides their form: a terminal gets one readable line per record
// (pino-pretty, in this process, after the scrubbing above), anything else (journald, a pipe,
// a file, a log shipper) gets one JSON object per line.
import tty from 'node:tty';
import { pino, type Logger, type LoggerOptions } from 'pino';
import { PinoPretty } from 'pino-pretty';
import { redactUrl, scrubCredentials } from '../core/redact.js';

export const REDACT_PATHS = [
  'req.headers.accesskey',
  'req.headers.authorization',
  'req.headers["idempotency-key"]',
  'headers.accesskey',
  'headers.authorization',
  'accessKey',
  'apiToken',
  'ticket',
  '*.accessKey',
  '*.apiToken',
  '*.ticket',
  '*.secret',
];

export { redactUrl };

/** The file descriptor a destination writes to, when it is one (pino.destination(N) is). */
function destinationFd(destination: pino.DestinationStream | undefined): number | null {
  if (!destination) return 1;
  const fd = (destination as { fd?: unknown }).fd;
  return typeof fd === 'number' ? fd : null;
}

/** A synchronous pretty-printer on a file descriptor (or a stream): records are written
 * before the process may exit, as with pino.destination. Fields every line of this process
 * shares are left out. */
function prettyStream(destination: number | pino.DestinationStream, hidden: readonly string[]): pino.DestinationStream {
  return PinoPretty({
    destination,
    sync: true,
    singleLine: true,
    translateTime: 'SYS:HH:MM:ss.l',
    ignore: ['pid', 'hostname', 'service', ...hidden].join(','),
  });
}

/**
 * @param opts.destination where lines go (default stdout)
 * @param opts.terminal whether that is a terminal (default: asked of its file descriptor);
 *   true writes readable lines, false JSON
 * @param opts.service the `service` field of every line (default scribed)
 * @param opts.hiddenOnTerminal fields every line of this process shares, left out of readable lines
 */
export function createLogger(
  opts: {
    level?: string;
    destination?: pino.DestinationStream;
    terminal?: boolean;
    service?: string;
    hiddenOnTerminal?: readonly string[];
  } = {},
): Logger {
  const options: LoggerOptions = {
    level: opts.level ?? 'info',
    redact: { paths: REDACT_PATHS, censor: '[Redacted]' },
    base: { service: opts.service ?? 'scribed' },
    serializers: {
      req(req: { method?: string; url?: string; id?: unknown; ip?: string }) {
        return { id: req.id, method: req.method, url: redactUrl(req.url ?? ''), remoteAddress: req.ip };
      },
    },
    hooks: { streamWrite: scrubCredentials },
  };
  const fd = destinationFd(opts.destination);
  const terminal = opts.terminal ?? (fd !== null && tty.isatty(fd));
  if (terminal) return pino(options, prettyStream(fd ?? opts.destination!, opts.hiddenOnTerminal ?? []));
  return opts.destination ? pino(options, opts.destination) : pino(options);
}

export type { Logger };
