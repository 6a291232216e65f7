// A recorded stream's payloads to the legs' audio, 16-bit PCM at 8 kHz: G.711 (PCMU, PCMA) a
// sample a byte; G.722 two samples at 16 kHz a byte, decoded and brought down to 8 kHz (the
// legs and the telephony model are narrowband, and one rate for every codec lets a re-INVITE
// change codec without a new leg). G.722's decoder and filter keep state, so one decoder serves
// one stream, and a codec change starts them afresh. Pure.
import { decodeAlaw, decodeMulaw } from '../audio/encodings.js';
import { Decimator, G722Decoder } from '../audio/g722.js';
import type { Codec } from './sdp.js';

export class PayloadDecoder {
  private g722: { decoder: G722Decoder; decimator: Decimator } | null = null;

  /** A payload of `codec` (one byte per RTP clock tick at 8000 Hz for each) as 8 kHz samples. */
  decode(codec: Codec, bytes: Uint8Array): Int16Array {
    if (codec === 'PCMA') return decodeAlaw(bytes);
    if (codec === 'PCMU') return decodeMulaw(bytes);
    this.g722 ??= { decoder: new G722Decoder(), decimator: new Decimator() };
    return this.g722.decimator.process(this.g722.decoder.decode(bytes));
  }

  /** The codec changed: G.722's state belongs to the stream it came from. */
  reset(): void {
    this.g722 = null;
  }
}
