// What `scribed stream` writes on stderr (docs/ingest.md "Output"). Its messages to the user
// are plain lines (`scribed stream: ...`). The pino log is for machines: JSON lines when
// stderr is not a terminal (a unit's journal, a pipe, a test), as before. In a terminal the
// log would mix JSON with those lines, so there it is pretty-printed (pino-pretty), only
// warnings and worse unless --log-level (or SCRIBED_LOG_LEVEL) asks for more, and a message
// said in a plain line goes to the log at debug only, so it is not said twice. The logger is the
// node's (src/obs/log.ts), so credentials are scrubbed from these lines as from the node's.
import { pino, type Logger } from 'pino';
import { createLogger } from '../obs/log.js';

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
  // The node's logger set-up (src/obs/log.ts): the same redaction and credential scrubbing, and
  // readable lines on a terminal; only the quieter default level there is the stream's own.
  const logger = createLogger({
    level: o.level ?? (terminal ? 'warn' : 'info'),
    destination: pino.destination({ fd: 2, sync: true }),
    terminal,
    service: o.service,
    hiddenOnTerminal: ['streamId'],
  });
  return {
    logger,
    terminal,
    tell(level, message, fields = {}, logMsg = message) {
      logger[terminal ? 'debug' : level](fields, logMsg);
      process.stderr.write(`${o.prefix}: ${level === 'warn' ? 'warning: ' : ''}${message}\n`);
    },
  };
}
