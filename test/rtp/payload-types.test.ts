import { describe, expect, it } from 'vitest';
import { alawToPcm16, decodeToPcm16, pcm16ToAlaw } from '../../src/core/audio/encodings.js';
import { ScribedError } from '../../src/core/errors.js';
import { buildPayloadTypeMap, defaultPayloadTypes, parsePayloadTypeSpec } from '../../src/rtp/payload-types.js';

describe('payload types', () => {
  it('maps the static G.711 types and L16 mono 44.1 kHz by default', () => {
    const map = defaultPayloadTypes();
    expect(map.get(0)).toMatchObject({ codec: 'PCMU', clockRateHz: 8000, silenceByte: 0xff, sessionEncoding: 'mulaw_8000' });
    expect(map.get(8)).toMatchObject({ codec: 'PCMA', clockRateHz: 8000, silenceByte: 0xd5 });
    expect(map.get(11)).toMatchObject({ codec: 'L16', clockRateHz: 44100, bytesPerSample: 2, sessionEncoding: 'pcm_s16le_44100' });
    expect(map.has(96)).toBe(false);
  });

  it('passes mu-law through unchanged', () => {
    const wire = Uint8Array.from([0x00, 0x7f, 0xff, 0x80]);
    expect([...defaultPayloadTypes().get(0)!.toSession(wire)]).toEqual([0x00, 0x7f, 0xff, 0x80]);
  });

  it('turns A-law into the session encoding exactly', () => {
    const pcma = defaultPayloadTypes().get(8)!;
    const samples = [0, 1000, -1000, 32000, -32000];
    const wire = Uint8Array.from(samples.map(pcm16ToAlaw));
    const session = pcma.toSession(wire);
    if (pcma.sessionEncoding === 'pcm_s16le_8000') {
      expect([...decodeToPcm16('pcm_s16le_8000', session)]).toEqual([...wire].map(alawToPcm16));
    } else {
      expect([...session]).toEqual([...wire]);
    }
    // The silence byte decodes to the quietest A-law level.
    expect(Math.abs(alawToPcm16(pcma.silenceByte))).toBeLessThanOrEqual(8);
  });

  it('swaps L16 from network (big-endian) to little-endian without touching the datagram', () => {
    const format = parsePayloadTypeSpec('96=l16/16000');
    expect(format).toMatchObject({
      payloadType: 96,
      codec: 'L16',
      clockRateHz: 16000,
      bytesPerSample: 2,
      silenceByte: 0,
      sessionEncoding: 'pcm_s16le_16000',
    });
    const wire = Uint8Array.from([0x12, 0x34, 0xff, 0xfe]);
    const out = format.toSession(wire);
    expect([...decodeToPcm16('pcm_s16le_16000', out)]).toEqual([0x1234, -2]);
    expect([...wire]).toEqual([0x12, 0x34, 0xff, 0xfe]);
  });

  it('parses codec names case-insensitively, with an optional rate and a mono channel count', () => {
    expect(parsePayloadTypeSpec('97=L16/8000/1').sessionEncoding).toBe('pcm_s16le_8000');
    expect(parsePayloadTypeSpec('100=PCMU/8000').codec).toBe('PCMU');
    expect(parsePayloadTypeSpec('101=pcma').codec).toBe('PCMA');
  });

  const refused: Array<[string, RegExp]> = [
    ['96', /expected N=l16/],
    ['96=l16', /needs a rate/],
    ['96=l16/11025', /no session encoding/],
    ['96=l16/16000/2', /mono/],
    ['128=l16/8000', /0-127/],
    ['72=l16/8000', /clash with RTCP/],
    ['96=opus/48000', /unknown codec/],
    ['96=pcmu/16000', /8000 Hz/],
  ];
  for (const [spec, message] of refused) {
    it(`refuses --payload-type ${spec} as VALIDATION_FAILED`, () => {
      let err: unknown;
      try {
        parsePayloadTypeSpec(spec);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ScribedError);
      expect((err as ScribedError).code).toBe('VALIDATION_FAILED');
      expect((err as ScribedError).message).toMatch(message);
    });
  }

  it('adds dynamic types to the defaults and lets a spec replace a default', () => {
    const map = buildPayloadTypeMap(['96=l16/16000', '0=l16/8000']);
    expect(map.get(96)?.clockRateHz).toBe(16000);
    expect(map.get(0)?.codec).toBe('L16');
    expect(map.get(8)?.codec).toBe('PCMA');
  });
});
