import { describe, expect, it } from 'vitest';
import { ForkDemux, parseForkMetadata } from '../../src/gateway/fork.js';

describe('parseForkMetadata', () => {
  it('reads jambonz metadata (callSid, sampleRate, mixType, nested metadata speakers)', () => {
    const r = parseForkMetadata(
      JSON.stringify({
        callSid: 'b5e3-99',
        sampleRate: 16000,
        mixType: 'stereo',
        metadata: { callerSpeaker: 'customer', calleeSpeaker: 'agent', agentId: 'agent-42' },
      }),
    );
    expect(r).toEqual({
      ok: true,
      metadata: {
        sampleRate: 16000,
        mixType: 'stereo',
        channels: 2,
        callId: 'b5e3-99',
        speakers: ['customer', 'agent'],
        agentId: 'agent-42',
      },
    });
  });
  it('takes mod_audio_fork metadata with the rate and mix from the URL query', () => {
    const r = parseForkMetadata(JSON.stringify({ uuid: 'f00d-1' }), new URLSearchParams('sampleRate=8k&mixType=mixed'));
    expect(r).toEqual({ ok: true, metadata: { sampleRate: 8000, mixType: 'mixed', channels: 1, callId: 'f00d-1', speakers: ['mixed'] } });
    expect(parseForkMetadata('{}', new URLSearchParams('sampleRate=24000'))).toMatchObject({
      ok: true,
      metadata: { sampleRate: 24000, mixType: 'mono', speakers: ['caller'], callId: null },
    });
  });
  it.each([
    ['nope', 'not_json'],
    ['[1]', 'bad_field'],
    ['{}', 'bad_field'],
    ['{"sampleRate":64000}', 'unsupported_rate'],
    ['{"sampleRate":"fast"}', 'unsupported_rate'],
    ['{"sampleRate":8000,"mixType":"quad"}', 'bad_field'],
    ['{"sampleRate":8000,"callSid":"has space"}', 'bad_field'],
    ['{"sampleRate":8000,"callSid":7}', 'bad_field'],
    ['{"sampleRate":8000,"callerSpeaker":"no way"}', 'bad_speaker'],
    ['{"sampleRate":8000,"mixType":"stereo","callerSpeaker":"x","calleeSpeaker":"x"}', 'bad_speaker'],
    ['{"sampleRate":8000,"agentId":""}', 'bad_field'],
    ['{"sampleRate":8000,"agentId":7}', 'bad_field'],
    ['{"sampleRate":8000,"metadata":{"agentId":"a\\u0007b"}}', 'bad_field'],
  ])('refuses %s as %s', (text, reason) => {
    expect(parseForkMetadata(text)).toMatchObject({ ok: false, reason });
  });
});

describe('ForkDemux', () => {
  it('splits interleaved stereo into two channels, carrying partial instants across frames', () => {
    const d = new ForkDemux(2);
    const all = Buffer.alloc(4 * 5);
    for (let i = 0; i < 5; i++) {
      all.writeInt16LE(100 + i, i * 4);
      all.writeInt16LE(-100 - i, i * 4 + 2);
    }
    const out = [d.push(all.subarray(0, 3)), d.push(all.subarray(3, 13)), d.push(all.subarray(13))];
    const left = Buffer.concat(out.map((o) => o[0]!));
    const right = Buffer.concat(out.map((o) => o[1]!));
    expect([...new Int16Array(left.buffer.slice(left.byteOffset, left.byteOffset + left.length))]).toEqual([100, 101, 102, 103, 104]);
    expect([...new Int16Array(right.buffer.slice(right.byteOffset, right.byteOffset + right.length))]).toEqual([
      -100, -101, -102, -103, -104,
    ]);
    expect(d.pendingBytes).toBe(0);
  });
  it('passes mono through in whole samples and reports a dangling byte', () => {
    const d = new ForkDemux(1);
    expect(d.push(Buffer.from([1, 2, 3]))[0]).toEqual(Buffer.from([1, 2]));
    expect(d.pendingBytes).toBe(1);
    expect(d.push(Buffer.from([4]))[0]).toEqual(Buffer.from([3, 4]));
  });
});
