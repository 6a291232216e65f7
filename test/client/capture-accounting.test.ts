import { describe, expect, it } from 'vitest';
import { CaptureAccount, wireSamples } from '../../src/client/capture-accounting.js';

describe('CaptureAccount', () => {
  it('frames by window and frame size, and maps positions into the epoch', () => {
    const a = new CaptureAccount();
    a.capture(1000);
    expect(a.nextFrame(160, 400)).toBeNull(); // no epoch before ready
    a.onReady(1, 0, 0);
    const f1 = a.nextFrame(160, 400)!;
    expect(f1).toEqual({ from: 0, samples: 160, sampleOffset: 0, epoch: 1 });
    a.markSent(f1);
    a.markSent(a.nextFrame(160, 400)!);
    expect(a.nextFrame(160, 400)).toEqual({ from: 320, samples: 80, sampleOffset: 320, epoch: 1 });
    expect(a.onAck(160)).toBe(160);
    expect(a.inFlight).toBe(160);
  });

  it('re-sends exactly what the server lacks after a resume (protocol worked example)', () => {
    const a = new CaptureAccount();
    a.capture(41600);
    a.onReady(1, 0, 0);
    a.markSent({ from: 0, samples: 41600, sampleOffset: 0, epoch: 1 });
    a.onAck(40800);
    // Socket lost; the server had 40960 and resumed into epoch 2.
    a.rewind();
    a.onReady(2, 0, 40960);
    expect(a.acknowledged).toBe(40960);
    expect(a.nextFrame(10000, 10000)).toEqual({ from: 40960, samples: 640, sampleOffset: 0, epoch: 2 });
  });

  it('a re-attached client continues after the samples the server holds', () => {
    const a = new CaptureAccount();
    a.reattach(8000);
    a.capture(160);
    a.onReady(3, 0, 8000);
    expect(a.nextFrame(1000, 1000)).toEqual({ from: 8000, samples: 160, sampleOffset: 0, epoch: 3 });
  });

  it('refuses a server that claims more than was captured', () => {
    const a = new CaptureAccount();
    a.capture(10);
    expect(() => a.onReady(1, 0, 11)).toThrow(RangeError);
  });

  it('finds the audio this client sent inside a gap the server filled', () => {
    const a = new CaptureAccount();
    a.capture(10_000);
    a.onReady(2, 0, 4000); // epoch 2 starts at session position 4000
    a.markSent(a.nextFrame(800, 10_000)!); // 4000..4800
    a.markSent(a.nextFrame(800, 10_000)!); // 4800..5600
    // The server lost the first frame and took the second: silence at sampleOffset 0, 800 long.
    expect(a.realAudioInGap({ epoch: 2, sampleOffset: 0, samples: 800 })).toEqual({ from: 4000, to: 4800 });
    // Only what was sent counts; a stale epoch is not this socket's.
    expect(a.realAudioInGap({ epoch: 2, sampleOffset: 1200, samples: 2000 })).toEqual({ from: 5200, to: 5600 });
    expect(a.realAudioInGap({ epoch: 1, sampleOffset: 0, samples: 800 })).toBeNull();
    expect(a.realAudioInGap({ epoch: 2, sampleOffset: 1600, samples: 800 })).toBeNull();
    // Below `silentBelow` the client itself sent silence (overflow): no loss there.
    expect(a.realAudioInGap({ epoch: 2, sampleOffset: 0, samples: 800 }, 4500)).toEqual({ from: 4500, to: 4800 });
    expect(a.realAudioInGap({ epoch: 2, sampleOffset: 0, samples: 800 }, 4800)).toBeNull();
    // A rewind does not unsend: the range stays sent in this epoch.
    a.rewind();
    expect(a.realAudioInGap({ epoch: 2, sampleOffset: 800, samples: 800 })).toEqual({ from: 4800, to: 5600 });
  });

  it('parses wire counts strictly', () => {
    expect(wireSamples('48000')).toBe(48000);
    expect(wireSamples(12)).toBe(12);
    expect(() => wireSamples('-1')).toThrow();
    expect(() => wireSamples('9007199254740993')).toThrow();
  });
});
