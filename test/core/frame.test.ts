// The socket frame codec: header layout, every rejection with its code, and control
// message parsing.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { ScribedError, type ErrorCode } from '../../src/core/errors.js';
import {
  AUDIO_HEADER_BYTES,
  DEFAULT_MAX_FRAME_PAYLOAD_BYTES,
  decodeAudioFrame,
  encodeAudioFrame,
  parseControlMessage,
} from '../../src/core/frame.js';

function thrown(fn: () => unknown): ScribedError {
  try {
    fn();
  } catch (err) {
    if (err instanceof ScribedError) return err;
    throw err;
  }
  throw new Error('expected a ScribedError, nothing was thrown');
}

function expectCode(fn: () => unknown, code: ErrorCode, message?: RegExp): void {
  const err = thrown(fn);
  expect(err.code).toBe(code);
  if (message) expect(err.message).toMatch(message);
}

const MAX = DEFAULT_MAX_FRAME_PAYLOAD_BYTES;

function header(bytes: number[]): Uint8Array {
  return Uint8Array.from(bytes);
}

describe('audio frame layout', () => {
  it('has a 16-byte header and the documented default limit', () => {
    expect(AUDIO_HEADER_BYTES).toBe(16);
    expect(DEFAULT_MAX_FRAME_PAYLOAD_BYTES).toBe(131072);
  });

  it('writes the documented bytes, little-endian', () => {
    const buf = encodeAudioFrame({ epoch: 0x01020304, sampleOffset: 0x0000_0506_0708_090an, payload: Uint8Array.of(0xaa, 0xbb) });
    expect([...buf]).toEqual([0x01, 0x01, 0, 0, 0x04, 0x03, 0x02, 0x01, 0x0a, 0x09, 0x08, 0x07, 0x06, 0x05, 0, 0, 0xaa, 0xbb]);
  });

  it('decodes the protocol example (mu-law, 160 bytes)', () => {
    const buf = new Uint8Array(16 + 160);
    buf.set(header([0x01, 0x01, 0x00, 0x00, 0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]));
    const f = decodeAudioFrame(buf, 'mulaw_8000', MAX);
    expect(f).toMatchObject({ epoch: 1, sampleOffset: 0, samples: 160 });
    expect(f.payload.byteLength).toBe(160);
  });

  it('round-trips any valid frame, also from an unaligned view', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 0xffffffff }),
        fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }),
        fc
          .uint8Array({ minLength: 1, maxLength: 200 })
          .map((a) => (a.length % 2 ? a.subarray(0, a.length - 1) : a))
          .filter((a) => a.length > 0),
        fc.nat(5),
        (epoch, sampleOffset, payload, pad) => {
          const enc = encodeAudioFrame({ epoch, sampleOffset, payload });
          const host = new Uint8Array(pad + enc.length);
          host.set(enc, pad);
          const f = decodeAudioFrame(host.subarray(pad), 'pcm_s16le_16000', MAX);
          expect(f.epoch).toBe(epoch);
          expect(f.sampleOffset).toBe(sampleOffset);
          expect([...f.payload]).toEqual([...payload]);
          expect(f.samples).toBe(payload.length / 2);
        },
      ),
    );
  });

  it('never throws anything but a frame error on arbitrary bytes', () => {
    const codes = new Set(['MALFORMED_FRAME', 'INVALID_SAMPLE_SIZE', 'FRAME_TOO_LARGE']);
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), fc.boolean(), (buf, pcm) => {
        try {
          decodeAudioFrame(buf, pcm ? 'pcm_s16le_8000' : 'mulaw_8000', 32);
        } catch (err) {
          expect(err).toBeInstanceOf(ScribedError);
          expect(codes.has((err as ScribedError).code)).toBe(true);
        }
      }),
    );
  });
});

describe('audio frame rejections', () => {
  const good = () => encodeAudioFrame({ epoch: 1, sampleOffset: 0, payload: new Uint8Array(4) });
  const mutate = (i: number, v: number) => {
    const b = good();
    b[i] = v;
    return b;
  };

  it('refuses a frame shorter than the header', () => {
    expectCode(() => decodeAudioFrame(new Uint8Array(15), 'pcm_s16le_16000', MAX), 'MALFORMED_FRAME', /15 bytes/);
    expectCode(() => decodeAudioFrame(new Uint8Array(0), 'pcm_s16le_16000', MAX), 'MALFORMED_FRAME');
  });

  it('refuses an unknown frame type', () => {
    expectCode(() => decodeAudioFrame(mutate(0, 0x02), 'pcm_s16le_16000', MAX), 'MALFORMED_FRAME', /frame type 0x02/);
    expectCode(() => decodeAudioFrame(mutate(0, 0x00), 'pcm_s16le_16000', MAX), 'MALFORMED_FRAME', /frame type/);
  });

  it('refuses another header version', () => {
    expectCode(() => decodeAudioFrame(mutate(1, 2), 'pcm_s16le_16000', MAX), 'MALFORMED_FRAME', /version 2/);
    expectCode(() => decodeAudioFrame(mutate(1, 0), 'pcm_s16le_16000', MAX), 'MALFORMED_FRAME', /version 0/);
  });

  it('refuses non-zero reserved bytes', () => {
    expectCode(() => decodeAudioFrame(mutate(2, 1), 'pcm_s16le_16000', MAX), 'MALFORMED_FRAME', /reserved/);
    expectCode(() => decodeAudioFrame(mutate(3, 0x80), 'pcm_s16le_16000', MAX), 'MALFORMED_FRAME', /reserved/);
  });

  it('accepts sampleOffset 2^53-1 and refuses 2^53 and above', () => {
    const at = (o: bigint) => encodeAudioFrame({ epoch: 1, sampleOffset: o, payload: new Uint8Array(2) });
    expect(decodeAudioFrame(at(2n ** 53n - 1n), 'pcm_s16le_16000', MAX).sampleOffset).toBe(Number.MAX_SAFE_INTEGER);
    expectCode(() => decodeAudioFrame(at(2n ** 53n), 'pcm_s16le_16000', MAX), 'MALFORMED_FRAME', /2\^53/);
    expectCode(() => decodeAudioFrame(at(2n ** 64n - 1n), 'pcm_s16le_16000', MAX), 'MALFORMED_FRAME', /2\^53/);
  });

  it('reads the full uint32 epoch', () => {
    const f = decodeAudioFrame(
      encodeAudioFrame({ epoch: 0xffffffff, sampleOffset: 0, payload: new Uint8Array(2) }),
      'pcm_s16le_16000',
      MAX,
    );
    expect(f.epoch).toBe(0xffffffff);
  });

  it('refuses an empty payload', () => {
    const b = encodeAudioFrame({ epoch: 1, sampleOffset: 0, payload: new Uint8Array(0) });
    expectCode(() => decodeAudioFrame(b, 'mulaw_8000', MAX), 'MALFORMED_FRAME', /empty payload/);
  });

  it('refuses an odd PCM payload but not an odd mu-law one', () => {
    const b = encodeAudioFrame({ epoch: 1, sampleOffset: 0, payload: new Uint8Array(3) });
    expectCode(() => decodeAudioFrame(b, 'pcm_s16le_16000', MAX), 'INVALID_SAMPLE_SIZE', /3 bytes/);
    expect(decodeAudioFrame(b, 'mulaw_8000', MAX).samples).toBe(3);
  });

  it('accepts a payload at the limit and refuses one byte more', () => {
    const at = (n: number) => encodeAudioFrame({ epoch: 1, sampleOffset: 0, payload: new Uint8Array(n) });
    expect(decodeAudioFrame(at(MAX), 'pcm_s16le_48000', MAX).samples).toBe(MAX / 2);
    expectCode(() => decodeAudioFrame(at(MAX + 2), 'pcm_s16le_48000', MAX), 'FRAME_TOO_LARGE', /131074 bytes/);
    expectCode(() => decodeAudioFrame(at(11), 'mulaw_8000', 10), 'FRAME_TOO_LARGE');
    expect(decodeAudioFrame(at(10), 'mulaw_8000', 10).samples).toBe(10);
  });
});

describe('control messages', () => {
  it('parses commit, close and ping', () => {
    expect(parseControlMessage('{"type":"commit"}')).toEqual({ type: 'commit' });
    expect(parseControlMessage('{"type":"close"}')).toEqual({ type: 'close' });
    expect(parseControlMessage('{"type":"ping"}')).toEqual({ type: 'ping' });
    expect(parseControlMessage('{"type":"ping","id":"x"}')).toEqual({ type: 'ping', id: 'x' });
  });

  it('ignores extra fields', () => {
    expect(parseControlMessage('{"type":"commit","future":1,"id":5}')).toEqual({ type: 'commit' });
    expect(parseControlMessage('{"type":"ping","id":"a","x":[1]}')).toEqual({ type: 'ping', id: 'a' });
  });

  it('bounds the ping id at 64 characters', () => {
    expect(parseControlMessage(JSON.stringify({ type: 'ping', id: 'i'.repeat(64) }))).toEqual({ type: 'ping', id: 'i'.repeat(64) });
    expect(parseControlMessage(JSON.stringify({ type: 'ping', id: '😀'.repeat(64) }))).toMatchObject({ type: 'ping' });
    expectCode(
      () => parseControlMessage(JSON.stringify({ type: 'ping', id: 'i'.repeat(65) })),
      'MALFORMED_FRAME',
      /ping id is longer than 64/,
    );
    expectCode(() => parseControlMessage('{"type":"ping","id":7}'), 'MALFORMED_FRAME', /ping id must be a string/);
  });

  it.each([
    ['not JSON', '{"type":', /not valid JSON/],
    ['empty', '', /not valid JSON/],
    ['an array', '[{"type":"commit"}]', /must be a JSON object/],
    ['null', 'null', /must be a JSON object/],
    ['a string', '"commit"', /must be a JSON object/],
    ['a number', '1', /must be a JSON object/],
    ['without type', '{"kind":"commit"}', /has no type/],
    ['with a non-string type', '{"type":1}', /type must be a string/],
    ['of unknown type', '{"type":"flush"}', /unknown control message type "flush"/],
    ['of a type that differs in case', '{"type":"Commit"}', /unknown control message type/],
  ])('refuses a message that is %s', (_name, text, reason) => {
    expectCode(() => parseControlMessage(text), 'MALFORMED_FRAME', reason);
  });

  it('refuses messages over the byte limit, counted in UTF-8', () => {
    const pad = (n: number) => JSON.stringify({ type: 'commit', pad: 'p'.repeat(n - 26) });
    expect(pad(4096).length).toBe(4096);
    expect(parseControlMessage(pad(4096))).toEqual({ type: 'commit' });
    expectCode(() => parseControlMessage(pad(4097)), 'MALFORMED_FRAME', /4097 bytes; the limit is 4096/);
    const multi = JSON.stringify({ type: 'commit', pad: 'é'.repeat(30) }); // 2 bytes per é
    expectCode(() => parseControlMessage(multi, 80), 'MALFORMED_FRAME', /the limit is 80/);
    expect(multi.length).toBeLessThan(80);
  });
});
