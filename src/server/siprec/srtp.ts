// SRTP for a recording server's dialogs (docs/siprec.md, "SIP over TLS and SRTP"): the SDES keys
// each offer carries (src/core/sip/sdes.ts) and ours for the answer, per dialog and stream, and
// the SRTP context each stream's RTP socket decrypts with (src/core/srtp.ts). A stream keeps its
// context (and so its roll-over counter and replay window) across re-offers that repeat its key;
// a new key in a re-offer starts a new context. Our key is made once per stream and repeated in
// every answer: we send no media, but RFC 4568 wants a key of ours in the answer.
import type { OfferedStream } from '../../core/sip/sdp.js';
import { streamKey } from '../../core/sip/binding.js';
import { chooseSdes, withAnswerCrypto } from '../../core/sip/sdes.js';
import { SrtpContext, formatCryptoAttribute, newSrtpKeys, type SrtpKeys } from '../../core/srtp.js';
import type { TransportName } from './transport.js';

interface Keyed {
  tag: number;
  remote: SrtpKeys;
  local: SrtpKeys;
}

const sameKeys = (a: SrtpKeys, b: SrtpKeys) =>
  a.suite === b.suite && a.mkiLength === b.mkiLength && a.masterKey.equals(b.masterKey) && a.masterSalt.equals(b.masterSalt);

/** A socket that can decrypt: media.ts's RtpStreamSocket. */
export interface SrtpReceiver {
  srtp: SrtpContext | null;
}

export class SdesStreams {
  private readonly dialogs = new Map<string, Map<string, Keyed>>();

  constructor(private readonly allowWithoutTls: boolean) {}

  /** Reads an offer's keys for `dialog`: 488 (SipRefusal) for SDES over UDP/TCP unless allowed,
   * or an SRTP stream with no usable suite; once it returns, every live SRTP stream is keyed. */
  offer(dialog: string, sdp: string, streams: readonly OfferedStream[], transport: TransportName): void {
    const chosen = chooseSdes(sdp, streams, { protectedSignalling: transport === 'tls', allowUnprotected: this.allowWithoutTls });
    if (chosen.size === 0 && !this.dialogs.has(dialog)) return;
    const keyed = this.dialogs.get(dialog) ?? new Map<string, Keyed>();
    this.dialogs.set(dialog, keyed);
    for (const s of streams) {
      const c = chosen.get(s.index);
      const key = streamKey(s);
      if (!c) {
        if (s.port !== 0) keyed.delete(key);
        continue;
      }
      const before = keyed.get(key);
      const local = before && before.local.suite === c.keys.suite ? before.local : newSrtpKeys(c.keys.suite);
      keyed.set(key, { tag: c.tag, remote: c.keys, local });
    }
  }

  /** Points a stream's socket at its keys: decrypting with them, or plain RTP without. */
  attach(dialog: string, stream: OfferedStream, socket: SrtpReceiver): void {
    const k = this.dialogs.get(dialog)?.get(streamKey(stream));
    if (!k || !stream.secure) socket.srtp = null;
    else if (!socket.srtp || !sameKeys(socket.srtp.params, k.remote)) socket.srtp = new SrtpContext(k.remote);
  }

  /** The answer with our `a=crypto` on every keyed SRTP stream. */
  answer(dialog: string, sdp: string, answered: ReadonlyArray<{ stream: OfferedStream; port: number }>): string {
    const keyed = this.dialogs.get(dialog);
    if (!keyed) return sdp;
    const crypto = new Map<number, string>();
    for (const [i, a] of answered.entries()) {
      const k = keyed.get(streamKey(a.stream));
      if (k && a.stream.secure && a.port !== 0) crypto.set(i, formatCryptoAttribute(k.tag, k.local));
    }
    return withAnswerCrypto(sdp, crypto);
  }

  forget(dialog: string): void {
    this.dialogs.delete(dialog);
  }
}
