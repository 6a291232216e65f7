import { describe, expect, it } from 'vitest';
import { StreamEventState, type Decision } from '../../src/client/stream-events.js';
import { serverEvent, type ServerEvent } from '../../src/core/protocol.js';

const ready = (over: Partial<Extract<ServerEvent, { type: 'ready' }>> = {}): ServerEvent =>
  serverEvent.ready({
    sessionId: 's',
    transcriptionId: 't',
    epoch: 1,
    sampleOffset: 0,
    capturedSamples: '0',
    inputEncoding: 'mulaw_8000',
    sampleRateHz: 8000,
    accepting: true,
    maxFramePayloadBytes: 4000,
    openSegmentId: null,
    ...over,
  });

const kinds = (ds: Decision[]) => ds.map((d) => d.kind);

function sentUpTo(s: StreamEventState, upTo: number): void {
  for (;;) {
    const f = s.acct.nextFrame(800, 16000);
    if (!f || f.from >= upTo) return;
    s.acct.markSent(f);
  }
}

describe('StreamEventState', () => {
  it('ready: re-sends from what the server holds, takes its frame limit, and says send', () => {
    const s = new StreamEventState(8000);
    s.acct.capture(4000);
    const ds = s.apply(ready({ capturedSamples: '1000', sampleOffset: 1000, maxFramePayloadBytes: 512 }), 0);
    expect(kinds(ds)).toEqual(['acknowledged', 'ready', 'log', 'send']);
    expect(ds[0]).toEqual({ kind: 'acknowledged', samples: 1000 });
    expect(s.maxPayloadBytes).toBe(512);
    expect(s.acct.sendPos).toBe(1000);
  });

  it('an ack of another epoch is ignored; one that acknowledges nothing new still says send', () => {
    const s = new StreamEventState(8000);
    s.acct.capture(2000);
    s.apply(ready(), 0);
    sentUpTo(s, 2000);
    expect(s.apply(serverEvent.ack({ epoch: 2, sampleOffset: 0, capturedSamples: '800' }), 0)).toEqual([]);
    expect(s.apply(serverEvent.ack({ epoch: 1, sampleOffset: 800, capturedSamples: '800' }), 0)).toEqual([
      { kind: 'acknowledged', samples: 800 },
      { kind: 'send' },
    ]);
    expect(s.apply(serverEvent.ack({ epoch: 1, sampleOffset: 800, capturedSamples: '800' }), 0)).toEqual([{ kind: 'send' }]);
  });

  it('a final is emitted once per segment id; finals come back in segment order', () => {
    const s = new StreamEventState(8000);
    const fin = (id: string) =>
      serverEvent.final({
        segmentId: id,
        text: id,
        trigger: 'vad',
        start: { sample: '0', ms: 0, epoch: 1, epochSample: 0, epochMs: 0 },
        end: { sample: '8', ms: 1, epoch: 1, epochSample: 8, epochMs: 1 },
      });
    expect(kinds(s.apply(fin('seg_10'), 0))).toEqual(['final']);
    expect(s.apply(fin('seg_10'), 0)).toEqual([]);
    s.apply(fin('seg_9'), 0);
    expect(s.finalsInOrder().map((f) => f.segmentId)).toEqual(['seg_9', 'seg_10']);
  });

  it('accepting false for Characters rewinds and waits for credit; a backlog does not wait; true sends again', () => {
    const s = new StreamEventState(8000);
    s.acct.capture(2000);
    s.apply(ready(), 0);
    sentUpTo(s, 1600);
    expect(kinds(s.apply(serverEvent.accepting({ accepting: false, reason: 'INSUFFICIENT_CHARACTERS' }), 0))).toEqual([
      'log',
      'wait-for-credit',
    ]);
    expect(s.accepting).toBe(false);
    expect(s.acct.sendPos).toBe(0);
    expect(kinds(s.apply(serverEvent.accepting({ accepting: false, reason: 'RECOGNITION_BACKLOG' }), 0))).toEqual(['log']);
    expect(kinds(s.apply(serverEvent.accepting({ accepting: true }), 0))).toEqual(['log', 'send']);
    expect(s.accepting).toBe(true);
  });

  it('the credit clock runs from the first refusal and gives up after the timeout', () => {
    const s = new StreamEventState(8000);
    expect(s.creditVerdict(1000, 60_000, 15_000)).toEqual({ giveUp: false, retryInMs: 15_000 });
    expect(s.creditVerdict(50_000, 60_000, 15_000)).toEqual({ giveUp: false, retryInMs: 11_000 });
    expect(s.creditVerdict(61_000, 60_000, 15_000)).toEqual({ giveUp: true });
  });

  it('a ready saying accepting (the rest of a paid second) does not restart the credit clock; audio past a Character does', () => {
    const s = new StreamEventState(8000);
    s.acct.capture(40_000);
    s.apply(ready(), 0);
    sentUpTo(s, 23_904);
    s.apply(serverEvent.ack({ epoch: 1, sampleOffset: 23_904, capturedSamples: '23904' }), 0);
    expect(s.apply(serverEvent.accepting({ accepting: false, reason: 'INSUFFICIENT_CHARACTERS' }), 1000)[0]).toMatchObject({
      kind: 'log',
      level: 'warn',
    });
    expect(s.creditVerdict(1000, 20_000, 5000)).toEqual({ giveUp: false, retryInMs: 5000 });
    // Each retry: the server has 96 samples paid for, says accepting, refuses the next frame.
    for (const t of [6000, 11_000, 16_000]) {
      s.apply(ready({ epoch: t, capturedSamples: '23904', sampleOffset: 0 }), t);
      expect(s.accepting).toBe(true);
      expect(kinds(s.apply(serverEvent.error({ code: 'INSUFFICIENT_CHARACTERS', message: 'm', fatal: false }), t))).toEqual([
        'log',
        'server-error',
      ]);
      const again = s.apply(serverEvent.accepting({ accepting: false, reason: 'INSUFFICIENT_CHARACTERS' }), t);
      expect(again).toContainEqual({ kind: 'wait-for-credit' });
      expect(again[0]).toMatchObject({ kind: 'log', level: 'debug' }); // said once, at the first refusal
      const refused = s.apply(serverEvent.error({ code: 'NOT_ACCEPTING', message: 'm', fatal: false }), t);
      expect(refused[0]).toMatchObject({ kind: 'log', level: 'debug' });
    }
    expect(s.creditVerdict(21_000, 20_000, 5000)).toEqual({ giveUp: true });
    // Credit added: the server takes more than a Character's worth past the stop.
    const paid = new StreamEventState(8000);
    paid.acct.capture(40_000);
    paid.apply(ready(), 0);
    paid.apply(serverEvent.accepting({ accepting: false, reason: 'INSUFFICIENT_CHARACTERS' }), 0);
    paid.creditVerdict(0, 20_000, 5000);
    paid.apply(ready({ epoch: 2 }), 5000);
    sentUpTo(paid, 9000);
    paid.apply(serverEvent.ack({ epoch: 2, sampleOffset: 7200, capturedSamples: '7200' }), 5500);
    expect(paid.noCreditSince).toBe(0);
    paid.apply(serverEvent.ack({ epoch: 2, sampleOffset: 8000, capturedSamples: '8000' }), 5600);
    expect(paid.noCreditSince).toBeNull();
  });

  it('frame errors: refusals rewind; another non-fatal error drops the socket; both reach error listeners', () => {
    const s = new StreamEventState(8000);
    s.acct.capture(2000);
    s.apply(ready(), 0);
    sentUpTo(s, 1600);
    expect(kinds(s.apply(serverEvent.error({ code: 'STALE_EPOCH', message: 'm', fatal: false }), 0))).toEqual(['log', 'server-error']);
    expect(s.acct.sendPos).toBe(0);
    sentUpTo(s, 1600);
    expect(kinds(s.apply(serverEvent.error({ code: 'INTERNAL', message: 'm', fatal: false }), 0))).toEqual([
      'log',
      'log',
      'drop-socket',
      'server-error',
    ]);
  });

  it('a gap over audio this client sent is counted as lost and drops the socket; over overflow silence it is only logged', () => {
    const s = new StreamEventState(8000);
    s.acct.capture(4000);
    s.apply(ready(), 0);
    sentUpTo(s, 3200);
    const ds = s.apply(serverEvent.gap({ epoch: 1, sampleOffset: 800, samples: 800, capturedSamples: '1600' }), 0);
    expect(kinds(ds)).toEqual(['lost', 'log', 'drop-socket']);
    expect(s.gapSamples).toBe(800);
    s.silentBelow = 3200;
    expect(kinds(s.apply(serverEvent.gap({ epoch: 1, sampleOffset: 1600, samples: 800, capturedSamples: '2400' }), 0))).toEqual(['log']);
    expect(s.gapSamples).toBe(800);
  });

  it('closed carries the server count', () => {
    const s = new StreamEventState(8000);
    expect(s.apply(serverEvent.closed({ status: 'COMPLETED', capturedSamples: '8000', segments: 2 }), 0)).toEqual([
      { kind: 'closed', capturedSamples: 8000, segments: 2 },
    ]);
  });
});
