import { describe, expect, it } from 'vitest';
import {
  AudioSocketReader,
  AudioSocketState,
  audioSocketLeg,
  DEFAULT_AUDIOSOCKET_SPEAKERS,
  encodeAudioSocketMessage,
  formatUuid,
  uuidBytes,
} from '../../src/gateway/audiosocket.js';

const UUID = '0f1e2d3c-4b5a-6978-8796-a5b4c3d2e101';

describe('AudioSocket framing', () => {
  it('encodes kind, big-endian length and payload', () => {
    expect([...encodeAudioSocketMessage(0x00)]).toEqual([0, 0, 0]);
    expect([...encodeAudioSocketMessage(0x10, Buffer.alloc(320)).subarray(0, 3)]).toEqual([0x10, 0x01, 0x40]);
    expect(() => encodeAudioSocketMessage(0x10, Buffer.alloc(65536))).toThrow(RangeError);
  });

  it('reassembles messages split anywhere across reads', () => {
    const wire = Buffer.concat([
      encodeAudioSocketMessage(0x01, uuidBytes(UUID)),
      encodeAudioSocketMessage(0x10, Buffer.from([1, 0, 2, 0])),
      encodeAudioSocketMessage(0x03, Buffer.from('#')),
      encodeAudioSocketMessage(0x12, Buffer.from([3, 0])),
      encodeAudioSocketMessage(0xff, Buffer.from([2])),
      encodeAudioSocketMessage(0x00),
    ]);
    for (const step of [1, 2, 5, wire.length]) {
      const r = new AudioSocketReader();
      const items = [];
      for (let i = 0; i < wire.length; i += step) items.push(...r.push(wire.subarray(i, i + step)));
      expect(items.map((i) => (i.ok ? i.message : i))).toEqual([
        { kind: 'uuid', uuid: UUID },
        { kind: 'audio', rateHz: 8000, payload: Buffer.from([1, 0, 2, 0]) },
        { kind: 'dtmf', digit: '#' },
        { kind: 'audio', rateHz: 16000, payload: Buffer.from([3, 0]) },
        { kind: 'error', code: 2 },
        { kind: 'hangup' },
      ]);
      expect(r.pendingBytes).toBe(0);
    }
  });

  it.each([
    [encodeAudioSocketMessage(0x02, Buffer.alloc(6)), 'unknown_kind'],
    [encodeAudioSocketMessage(0x19, Buffer.alloc(2)), 'unknown_kind'],
    [encodeAudioSocketMessage(0x01, Buffer.alloc(15)), 'bad_uuid'],
    [encodeAudioSocketMessage(0x03, Buffer.from('x')), 'bad_dtmf'],
    [encodeAudioSocketMessage(0x03, Buffer.from('12')), 'bad_dtmf'],
    [encodeAudioSocketMessage(0x10, Buffer.alloc(3)), 'bad_audio_length'],
    [encodeAudioSocketMessage(0x10), 'bad_audio_length'],
  ])('refuses %o as %s and reads on', (bytes, reason) => {
    const r = new AudioSocketReader();
    const items = r.push(Buffer.concat([bytes, encodeAudioSocketMessage(0x00)]));
    expect(items[0]).toMatchObject({ ok: false, reason });
    expect(items[1]).toEqual({ ok: true, message: { kind: 'hangup' } });
  });

  it('keeps an incomplete message for the next read', () => {
    const r = new AudioSocketReader();
    expect(r.push(Buffer.from([0x10, 0x00, 0x04, 1, 2]))).toEqual([]);
    expect(r.pendingBytes).toBe(5);
  });
});

describe('AudioSocketState', () => {
  const audio = (rateHz: number) => ({ kind: 'audio' as const, rateHz, payload: Buffer.alloc(2) });
  it('wants the UUID first, one session rate, nothing after hang-up', () => {
    const s = new AudioSocketState();
    expect(s.check(audio(8000))).toMatchObject({ reason: 'out_of_order' });
    s.apply({ kind: 'uuid', uuid: UUID });
    expect(s.check({ kind: 'uuid', uuid: UUID })).toMatchObject({ reason: 'out_of_order' });
    expect(s.check(audio(12000))).toMatchObject({ reason: 'unsupported_rate' });
    expect(s.check(audio(16000))).toBeNull();
    s.apply(audio(16000));
    expect(s.check(audio(8000))).toMatchObject({ reason: 'out_of_order' });
    s.apply({ kind: 'hangup' });
    expect(s.check(audio(16000))).toMatchObject({ reason: 'out_of_order' });
  });
});

describe('audioSocketLeg', () => {
  it('pairs legs by the UUID without its last byte; the last byte picks the speaker', () => {
    expect(audioSocketLeg(UUID, DEFAULT_AUDIOSOCKET_SPEAKERS)).toEqual({
      callExternalId: '0f1e2d3c-4b5a-6978-8796-a5b4c3d2e100',
      leg: 1,
      speaker: 'caller',
    });
    expect(audioSocketLeg(UUID.replace(/01$/, '02'), DEFAULT_AUDIOSOCKET_SPEAKERS)).toMatchObject({
      callExternalId: '0f1e2d3c-4b5a-6978-8796-a5b4c3d2e100',
      speaker: 'callee',
    });
    expect(audioSocketLeg(UUID.replace(/01$/, 'ff'), DEFAULT_AUDIOSOCKET_SPEAKERS)).toMatchObject({ leg: 255, speaker: 'leg255' });
    expect(formatUuid(uuidBytes(UUID.toUpperCase()))).toBe(UUID);
    expect(() => uuidBytes('nope')).toThrow(RangeError);
  });
});
