// What the recording server says about itself and its calls: the capability headers of its
// answers, the Contact host, the metric label of a method, and a recorded call's title. Pure.
import type { RecordingMetadata } from './metadata.js';

export const ALLOW = 'INVITE, ACK, BYE, CANCEL, OPTIONS, UPDATE, INFO';
/** A call title's room (MAX_TITLE_CHARS) less a leg title's `: speaker` suffix. */
const MAX_TITLE = 180;

export function methodLabel(method: string): string {
  return ['INVITE', 'UPDATE', 'ACK', 'BYE', 'CANCEL', 'OPTIONS'].includes(method) ? method : 'OTHER';
}

export function capabilityHeaders(): Array<[string, string]> {
  return [
    ['allow', ALLOW],
    ['accept', 'application/sdp, application/rs-metadata+xml, application/rs-metadata, multipart/mixed'],
    ['supported', 'siprec'],
  ];
}

export function hostPart(address: string): string {
  return address.includes(':') ? `[${address}]` : address;
}

/** The call's title: its participants and the recorded call's SIP ids (shown on the desk). The
 * ids come first in the room a title has; the participants take what is left. */
export function callTitle(metadata: RecordingMetadata | null, sipCallId: string): string {
  const people = (metadata?.participants ?? []).map((p) => (p.name && p.aor ? `${p.name} <${p.aor}>` : (p.aor ?? p.name ?? p.id)));
  const session = metadata?.sipSessionId?.split(';')[0];
  const ids = ` (Call-ID ${sipCallId}${session ? `, session ${session}` : ''})`;
  const room = Math.max(20, MAX_TITLE - [...ids].length);
  const who = [...`SIPREC ${people.length > 0 ? people.join(' & ') : 'recording'}`];
  const head = who.length > room ? `${who.slice(0, room - 1).join('')}…` : who.join('');
  return [...`${head}${ids}`].slice(0, MAX_TITLE).join('');
}
