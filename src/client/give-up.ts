// When the ingest clients stop trying, one set of rules for `scribed stream` and `scribed rtp`
// (docs/ingest.md "Giving up", docs/rtp.md "Giving up on a call"): creating a session against
// a server never reached is bounded by --connect-timeout-ms, waiting for Characters by
// --credit-timeout-ms (both enforced by SessionStreamer), and the first SIGINT/SIGTERM ends the
// process within --stop-timeout-ms whatever the server does; a second signal leaves at once.
import type { Argv } from 'yargs';
import { StreamFatalError } from './session-streamer.js';

export const GIVE_UP_DEFAULTS = { connectTimeoutMs: 30_000, creditTimeoutMs: 60_000, stopTimeoutMs: 10_000 } as const;

export interface GiveUpArgs {
  'connect-timeout-ms': number;
  'credit-timeout-ms': number;
  'stop-timeout-ms': number;
}

/** The three flags, worded for what the command streams ('the session', "a call's session"). */
export function withGiveUpFlags<T>(y: Argv<T>, subject: { session: string; stop: string }): Argv<T & GiveUpArgs> {
  return y
    .option('connect-timeout-ms', {
      type: 'number',
      default: GIVE_UP_DEFAULTS.connectTimeoutMs,
      describe: `give up when the server cannot be reached to create ${subject.session} within this long`,
    })
    .option('credit-timeout-ms', {
      type: 'number',
      default: GIVE_UP_DEFAULTS.creditTimeoutMs,
      describe: `give up ${subject.session} when the account has had no Characters for this long`,
    })
    .option('stop-timeout-ms', {
      type: 'number',
      default: GIVE_UP_DEFAULTS.stopTimeoutMs,
      describe: `after the first SIGINT/SIGTERM, how long ${subject.stop} may take before the process exits 1 (sessions left paused)`,
    }) as Argv<T & GiveUpArgs>;
}

/** The SessionStreamer options of the flags; a bound that is not a positive number is refused
 * with the flag's name. */
export function giveUpOptions(args: GiveUpArgs): { connectTimeoutMs: number; noCreditTimeoutMs: number; stopTimeoutMs: number } {
  for (const flag of ['connect-timeout-ms', 'credit-timeout-ms', 'stop-timeout-ms'] as const) {
    const v = args[flag];
    if (!Number.isFinite(v) || v <= 0) throw new RangeError(`--${flag}: must be a positive number of milliseconds`);
  }
  return {
    connectTimeoutMs: args['connect-timeout-ms'],
    noCreditTimeoutMs: args['credit-timeout-ms'],
    stopTimeoutMs: args['stop-timeout-ms'],
  };
}

/** While waiting for Characters, how often to ask the server again: every 15 s, and at least
 * four times within the credit timeout, so a short --credit-timeout-ms is checked as often. */
export function creditRetryMs(creditTimeoutMs: number): number {
  return Math.max(1, Math.min(15_000, Math.floor(creditTimeoutMs / 4)));
}

/** Why a stream was given up, for logs and the `reason` label of metrics. */
export type GiveUpReason = 'unreachable' | 'no_credit' | 'refused';

/** The give-up reason of a streamer failure; null when it is not one (an abort). */
export function giveUpReason(err: unknown): GiveUpReason | null {
  if (!(err instanceof StreamFatalError)) return null;
  if (err.code === 'ABORTED') return null;
  if (err.code === 'UNREACHABLE') return 'unreachable';
  if (err.code === 'INSUFFICIENT_CHARACTERS') return 'no_credit';
  return 'refused';
}

export interface StopSignalHandlers {
  stopTimeoutMs: number;
  /** The first SIGINT/SIGTERM: stop reading and start closing. */
  onFirst(signal: NodeJS.Signals): void;
  /** The bound passed since the first signal: leave (exit 1). */
  onBoundExceeded(signal: NodeJS.Signals): void;
  /** A second signal: leave at once without closing. */
  onSecond(signal: NodeJS.Signals): void;
}

/** Install the SIGINT/SIGTERM handling both commands share. */
export function handleStopSignals(h: StopSignalHandlers): void {
  let signals = 0;
  const onSignal = (signal: NodeJS.Signals) => {
    signals += 1;
    if (signals > 1) {
      h.onSecond(signal);
      return;
    }
    // Armed first, so the bound holds even if onFirst throws or hangs on a promise.
    setTimeout(() => h.onBoundExceeded(signal), h.stopTimeoutMs).unref();
    h.onFirst(signal);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
}
