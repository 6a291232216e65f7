// Structured logs. Credentials never reach a log line:
// - header values and fields named like a secret are redacted by path (REDACT_PATHS);
// - request URLs are logged through redactUrl (src/core/redact.ts): secret-named query
//   values replaced, credential shapes scrubbed wherever they sit;
// - and, whatever else a line carries (an error message echoing a URL or a body, a field a
//   future change adds), every line is scrubbed of credential shapes, percent-encoded or not,
//   just before it is written (pino's streamWrite hook).
import { pino, type Logger, type LoggerOptions } from 'pino';
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

export function createLogger(opts: { level?: string; destination?: pino.DestinationStream } = {}): Logger {
  const options: LoggerOptions = {
    level: opts.level ?? process.env.SCRIBED_LOG_LEVEL ?? 'info',
    redact: { paths: REDACT_PATHS, censor: '[Redacted]' },
    base: { service: 'scribed' },
    serializers: {
      req(req: { method?: string; url?: string; id?: unknown; ip?: string }) {
        return { id: req.id, method: req.method, url: redactUrl(req.url ?? ''), remoteAddress: req.ip };
      },
    },
    hooks: { streamWrite: scrubCredentials },
  };
  return opts.destination ? pino(options, opts.destination) : pino(options);
}

export type { Logger };
