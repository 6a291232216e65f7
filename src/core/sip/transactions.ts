// The transaction and dialog rules a recording server needs (RFC 3261 sections 12, 13, 17):
// which dialog a request belongs to, what a request in each dialog state gets, retransmitted
// requests answered from the last response, and a 2xx to INVITE resent over UDP until its ACK.
// Pure: time is an argument, no timers.
import { header, headerParam, parseCSeq, type SipRequest } from './message.js';

/** RFC 3261 timers: T1 (round-trip estimate), T2 (longest retransmit interval), and how long a
 * transaction is remembered (64 * T1). */
export const T1_MS = 500;
export const T2_MS = 4000;
export const TRANSACTION_MS = 64 * T1_MS;

export type DialogState = 'answering' | 'confirmed' | 'terminated';

/** A server transaction's key: the top Via's branch and sent-by with the method (an ACK or
 * CANCEL matches its INVITE's branch, RFC 3261 17.2.3). */
export function transactionKey(req: SipRequest, method = req.method): string {
  const via = header(req, 'via') ?? '';
  const branch = headerParam(via, 'branch') ?? `${header(req, 'call-id')}|${header(req, 'cseq')}`;
  const sentBy = via.split(';')[0]!.trim().split(/\s+/).slice(1).join(' ');
  return `${branch}|${sentBy}|${method}`;
}

/** A dialog's key at the recorder: Call-ID and our (To) tag. */
export function dialogKey(callId: string, localTag: string): string {
  return `${callId}|${localTag}`;
}

export function toTagOf(req: SipRequest): string | undefined {
  return headerParam(header(req, 'to') ?? '', 'tag');
}

export function cseqOf(req: SipRequest): number {
  return parseCSeq(header(req, 'cseq') ?? '')?.seq ?? 0;
}

/** Delays before each resend of a 2xx to INVITE (T1 doubling up to T2), until TRANSACTION_MS
 * has passed without its ACK (RFC 3261 13.3.1.4). */
export function okRetransmitDelays(): number[] {
  const out: number[] = [];
  let delay = T1_MS;
  let total = 0;
  while (total + delay <= TRANSACTION_MS) {
    out.push(delay);
    total += delay;
    delay = Math.min(delay * 2, T2_MS);
  }
  return out;
}

/** Responses sent, by transaction, so a retransmitted request gets the same answer. */
export class ResponseCache {
  private readonly entries = new Map<string, { response: Buffer; until: number }>();

  constructor(private readonly maxEntries = 20_000) {}

  get(key: string, nowMs: number): Buffer | undefined {
    const e = this.entries.get(key);
    if (!e) return undefined;
    if (e.until < nowMs) {
      this.entries.delete(key);
      return undefined;
    }
    return e.response;
  }

  /** A request seen and not answered yet (its retransmissions are absorbed). */
  has(key: string, nowMs: number): boolean {
    return this.get(key, nowMs) !== undefined;
  }

  set(key: string, response: Buffer, nowMs: number): void {
    if (this.entries.size >= this.maxEntries) this.sweep(nowMs);
    if (this.entries.size >= this.maxEntries) {
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.entries.delete(oldest);
    }
    this.entries.delete(key);
    this.entries.set(key, { response, until: nowMs + TRANSACTION_MS });
  }

  sweep(nowMs: number): void {
    for (const [k, e] of this.entries) if (e.until < nowMs) this.entries.delete(k);
  }
}

/** What an in-dialog request gets in each dialog state (RFC 3261 12.2.2, RFC 3311). */
export function inDialogAnswer(state: DialogState | undefined, method: string): 'handle' | 481 | 491 | 405 {
  if (state === undefined || state === 'terminated') return method === 'ACK' ? 481 : 481;
  switch (method) {
    case 'ACK':
    case 'BYE':
    case 'OPTIONS':
    case 'INFO':
    case 'NOTIFY':
      return 'handle';
    case 'INVITE':
    case 'UPDATE':
      // A new offer while the first is still being answered: 491 (RFC 3261 14.2).
      return state === 'answering' && method === 'INVITE' ? 491 : 'handle';
    default:
      return 405;
  }
}
