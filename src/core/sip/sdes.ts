// SDES (RFC 4568) in a recording session's SDP: which `a=crypto` line of each SRTP (`RTP/SAVP`)
// stream we take, and our own line in the answer. The keys travel in the SDP, so they are only
// taken when the signalling is protected (SIP over TLS, RFC 4568 section 8.3): an SRTP offer over
// UDP or TCP is refused with 488 unless the operator allows it (docs/siprec.md). Pure.
import sdpTransform from 'sdp-transform';
import { SipRefusal, streamKey } from './binding.js';
import type { OfferedStream } from './sdp.js';
import { SRTP_SUITES, parseCryptoAttribute, type CryptoAttribute } from '../srtp.js';

/**
 * The `a=crypto` line taken for each live SRTP stream of the offer, by m-line index: the first
 * whose suite and key form we support (the offerer lists them by preference). Throws 488 for
 * SDES over unprotected signalling (unless allowed) and for an SRTP stream with no usable line.
 */
export function chooseSdes(
  sdp: string,
  streams: readonly OfferedStream[],
  o: { protectedSignalling: boolean; allowUnprotected: boolean },
): Map<number, CryptoAttribute> {
  const chosen = new Map<number, CryptoAttribute>();
  const secure = streams.filter((s) => s.secure && s.port !== 0);
  if (secure.length === 0) return chosen;
  if (!o.protectedSignalling && !o.allowUnprotected) throw new SipRefusal(488, 'SRTP keys (a=crypto) are taken over SIP over TLS only');
  const media = sdpTransform.parse(sdp).media ?? [];
  for (const s of secure) {
    const lines = media[s.index]?.crypto ?? [];
    const usable = lines
      .map((c) => parseCryptoAttribute(`${c.id} ${c.suite} ${c.config}${c.sessionConfig ? ` ${c.sessionConfig}` : ''}`))
      .find((c) => c !== null);
    if (!usable)
      throw new SipRefusal(488, `stream ${streamKey(s)} offers no SRTP crypto suite taken here (${SRTP_SUITES.join(', ')}, inline key)`);
    chosen.set(s.index, usable);
  }
  return chosen;
}

/** The answer with `RTP/SAVP` and our `a=crypto` value on the m-lines (by index) given. */
export function withAnswerCrypto(answer: string, crypto: ReadonlyMap<number, string>): string {
  if (crypto.size === 0) return answer;
  const parsed = sdpTransform.parse(answer);
  for (const [i, value] of crypto) {
    const m = parsed.media[i];
    if (!m || m.port === 0) continue;
    const [id, suite, config] = value.split(' ');
    m.protocol = 'RTP/SAVP';
    m.crypto = [{ id: Number(id), suite: suite!, config: config! }];
  }
  return sdpTransform.write(parsed);
}
