import { describe, expect, it } from 'vitest';
import { API_BASE, CLOSE_CODES, parseServerEvent, segmentId, segmentIndex, serverEvent } from '../../src/core/protocol.js';

describe('protocol constants', () => {
  it('segment ids round-trip and nothing else parses as one', () => {
    for (const i of [0, 1, 9, 10, 12345]) expect(segmentIndex(segmentId(i))).toBe(i);
    for (const bad of ['seg_', 'seg_01', 'seg_-1', 'seg_1a', 'xseg_1', 'seg_1 ', 'rts_1', '12']) expect(segmentIndex(bad)).toBeNull();
  });

  it('close codes and the base path are the documented ones', () => {
    expect(CLOSE_CODES).toEqual({
      normal: 1000,
      internal: 1011,
      serviceRestart: 1012,
      tryAgainLater: 1013,
      superseded: 4000,
      sessionClosed: 4001,
      watcherTooSlow: 4002,
      deskSessionEnded: 4003,
    });
    expect(API_BASE).toBe('/sound_clone/api/v1');
  });
});

describe('server events', () => {
  const t = (ms: number) => ({ sample: String(ms * 16), ms, epoch: 1, epochSample: ms * 16, epochMs: ms });
  const built = [
    serverEvent.ready({
      sessionId: 'rts_1',
      transcriptionId: 'tr_1',
      epoch: 1,
      sampleOffset: 0,
      capturedSamples: '0',
      inputEncoding: 'pcm_s16le_16k',
      sampleRateHz: 16000,
      accepting: true,
      maxFramePayloadBytes: 65536,
      openSegmentId: null,
    }),
    serverEvent.ack({ epoch: 1, sampleOffset: 320, capturedSamples: '320' }),
    serverEvent.partial({ segmentId: 'seg_0', text: 'hello', start: t(0), end: t(20) }),
    serverEvent.final({
      segmentId: 'seg_0',
      text: 'hello',
      trigger: 'commit',
      start: t(0),
      end: t(500),
      words: [{ word: 'hello', confidence: null, start: t(10), end: t(400) }],
    }),
    serverEvent.committed({ segmentId: null, capturedSamples: '8000' }),
    serverEvent.gap({ epoch: 1, sampleOffset: 320, samples: 160, capturedSamples: '480' }),
    serverEvent.accepting({ accepting: false, reason: 'SERVER_SHUTDOWN' }),
    serverEvent.notice({ code: 'REWRITE_NOT_APPLIED', message: 'no language model' }),
    serverEvent.error({ code: 'STALE_EPOCH', message: 'old epoch', fatal: false }),
    serverEvent.pong({ id: 'x' }),
    serverEvent.pong({}),
    serverEvent.watching({
      sessionId: 'rts_1',
      transcriptionId: 'tr_1',
      state: 'PAUSED',
      streaming: false,
      epoch: 2,
      capturedSamples: '8000',
      inputEncoding: 'mulaw_8000',
      sampleRateHz: 8000,
      accepting: true,
      openSegmentId: 'seg_1',
      segments: 2,
    }),
    serverEvent.closed({ status: 'COMPLETED', capturedSamples: '8000', segments: 1 }),
  ];

  it('every built event survives the wire and the client parser unchanged', () => {
    const types = new Set<string>();
    for (const event of built) {
      const parsed = parseServerEvent(JSON.stringify(event));
      expect(parsed).toEqual({ ok: true, event });
      types.add(event.type);
    }
    expect([...types].sort()).toEqual([
      'accepting',
      'ack',
      'closed',
      'committed',
      'error',
      'final',
      'gap',
      'notice',
      'partial',
      'pong',
      'ready',
      'watching',
    ]);
  });

  it('a known event without a field it must have is invalid, naming the field', () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ type: 'ack', epoch: 1, sampleOffset: 0 }, 'capturedSamples'],
      [{ type: 'ack', epoch: '1', sampleOffset: 0, capturedSamples: '0' }, 'epoch'],
      [{ type: 'partial', segmentId: 'seg_0', text: 'a', start: { ms: 0 }, end: t(1) }, 'start'],
      [{ type: 'final', segmentId: 'seg_0', text: 'a', trigger: 'vad', start: t(0), end: t(1), words: [{ word: 'a' }] }, 'words'],
      [{ type: 'ready', sessionId: 'rts_1' }, 'transcriptionId'],
      [{ type: 'error', code: 'X', message: 'y' }, 'fatal'],
      [{ type: 'pong', id: 7 }, 'id'],
      [{ type: 'watching', sessionId: 'rts_1', transcriptionId: 'tr_1', state: 'RECORDING', streaming: 'yes' }, 'streaming'],
    ];
    for (const [event, field] of cases) {
      const parsed = parseServerEvent(JSON.stringify(event));
      expect(parsed.ok).toBe(false);
      if (!parsed.ok) {
        expect(parsed.kind).toBe('invalid');
        expect(parsed.reason).toContain(field);
      }
    }
  });

  it('an unknown type is told apart from a broken event; non-objects are invalid', () => {
    expect(parseServerEvent('{"type":"speaker_change","speaker":"A"}')).toMatchObject({ ok: false, kind: 'unknown' });
    expect(parseServerEvent('{"type":"toString"}')).toMatchObject({ ok: false, kind: 'unknown' });
    for (const text of ['not json', '[]', 'null', '"ack"', '{"epoch":1}'])
      expect(parseServerEvent(text)).toMatchObject({ ok: false, kind: 'invalid' });
  });

  it('fields a newer server adds pass through', () => {
    const parsed = parseServerEvent(JSON.stringify({ ...serverEvent.notice({ code: 'A', message: 'b' }), severity: 'info' }));
    expect(parsed).toMatchObject({ ok: true, event: { type: 'notice', severity: 'info' } });
  });
});
