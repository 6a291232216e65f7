// Structured logs. Credentials never reach a log line: header values, ticket query
// parameters and any field named like a secret are redacted by path, and request URLs are
// logged with their query values for `ticket` replaced.
import { pino, type Logger, type LoggerOptions } from 'pino';

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

/** Replace the value of any `ticket` (or key-like) query parameter in a URL. */
export function redactUrl(url: string): string {
  return url.replace(/([?&](?:ticket|accessKey|access_key|apikey|api_key|token)=)[^&#]*/gi, '$1[Redacted]');
}

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
  };
  return opts.destination ? pino(options, opts.destination) : pino(options);
}

export type { Logger };
