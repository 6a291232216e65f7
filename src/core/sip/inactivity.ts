// When a recording session whose SBC sent no BYE is over (docs/siprec.md, "Inactivity"). An SBC
// that crashed, lost its network or forgot the dialog sends nothing more: no RTP on any stream
// and no SIP in the dialog. Either one is a sign of life, so both are watched, never RTP alone:
// while the recorded call is on hold its streams carry no RTP for as long as the hold lasts.
// A session whose every stream is held (a=inactive: the SBC says it sends nothing) waits for
// the longer hold limit, measured from the last SIP or RTP (the re-INVITE that put it on hold
// is SIP). Pure.
import type { OfferedStream } from './sdp.js';

export interface Liveness {
  /** Time of the last SIP request in the dialog (the INVITE included), ms. */
  lastSipMs: number;
  /** Time of the last RTP packet on any of its streams, ms (or -Infinity for none yet). */
  lastRtpMs: number;
  /** Every stream is one the SBC does not send on (a=inactive or recvonly), or none is left. */
  held: boolean;
}

export interface InactivityLimits {
  inactivityMs: number;
  holdMs: number;
}

/** A stream direction on which the recording client sends no RTP. */
export function sendsNothing(direction: OfferedStream['direction']): boolean {
  return direction === 'inactive' || direction === 'recvonly';
}

/** Why the session is over at `nowMs` ('inactivity' or 'hold'), or null while it is alive. */
export function inactivityVerdict(l: Liveness, nowMs: number, limits: InactivityLimits): 'inactivity' | 'hold' | null {
  const quiet = nowMs - Math.max(l.lastSipMs, l.lastRtpMs);
  if (l.held) return quiet >= limits.holdMs ? 'hold' : null;
  return quiet >= limits.inactivityMs ? 'inactivity' : null;
}

/** How often to look: a tenth of the shorter limit, within 250 ms .. 5 s. */
export function inactivityCheckEveryMs(limits: InactivityLimits): number {
  return Math.min(5000, Math.max(250, Math.floor(Math.min(limits.inactivityMs, limits.holdMs) / 10)));
}
