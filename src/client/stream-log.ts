// What `scribed stream` writes on stderr (docs/ingest.md "Output"). Its messages to the user
// are plain lines (`scribed stream: ...`). The pino log is for machines: JSON lines when
// stderr is not a terminal (a unit's journal, a pipe, a test), as before. In a terminal the
// log would mix JSON with those lines, so there it is pretty-printed (pino-pretty), only
// warnings and worse unless --log-level (or SCRIBED_LOG_LEVEL) asks for more, and a message
// said in a plain line goes to the log at debug only, so it is not said twice.
import { pino, type Logger } from 'pino';
import pretty from 'pino-pretty';
import { REDACT_PATHS } from '../obs/log.js';

export interface StreamLog {
  logger: Logger;
  /** stderr is a terminal: the log is pretty-printed. */
  terminal: boolean;
  /** A message for the user: one plain line on stderr (`scribed stream: [warning: ]...`), and
   * the log (at `level` off a terminal, at debug in one; its msg `logMsg`, else the message). */
  tell(level: 'info' | 'warn' | 'error', message: string, fields?: Record<string, unknown>, logMsg?: string): void;
}

export function streamLog(o: { level: string | undefined; service: string; prefix: string; terminal?: boolean }): StreamLog {
  const terminal = o.terminal ?? process.stderr.isTTY === true;
  const base = { redact: { paths: REDACT_PATHS, censor: '[Redacted]' }, base: { service: o.service } };
  const logger = terminal
    ? pino({ ...base, level: o.level ?? 'warn' }, pretty({ destination: 2, sync: true, singleLine: true, ignore: 'pid,hostname,service,streamId', translateTime: 'SYS:HH:MM:ss' }))
    : pino({ ...base, level: o.level ?? 'info' }, pino.destination(2));
  return {
    logger,
    terminal,
    tell(level, message, fields = {}, logMsg = message) {
      logger[terminal ? 'debug' : level](fields, logMsg);
      process.stderr.write(`${o.prefix}: ${level === 'warn' ? 'warning: ' : ''}${message}\n`);
    },
  };
}
