import { describe, expect, it } from 'vitest';
import { StreamResampler } from '../../src/engine/resampler.js';

function sine(n: number, rate: number, freq: number, amp: number, phase0 = 0): Int16Array {
  const x = new Int16Array(n);
  for (let i = 0; i < n; i++) x[i] = Math.round(amp * Math.sin((2 * Math.PI * freq * (i + phase0)) / rate));
  return x;
}

/** Frequency by counting rising zero crossings; amplitude from RMS. */
function analyse(y: Int16Array, rate: number): { freq: number; amp: number } {
  let crossings = 0;
  let first = -1;
  let last = -1;
  for (let i = 1; i < y.length; i++) {
    if (y[i - 1]! < 0 && y[i]! >= 0) {
      crossings++;
      if (first < 0) first = i;
      last = i;
    }
  }
  let ss = 0;
  for (const v of y) ss += v * v;
  return { freq: ((crossings - 1) * rate) / (last - first), amp: Math.sqrt(ss / y.length) * Math.SQRT2 };
}

describe('StreamResampler', () => {
  it('passes samples through unchanged when the rates match', () => {
    const r = new StreamResampler(16_000, 16_000);
    const x = sine(320, 16_000, 440, 1000);
    expect(r.identity).toBe(true);
    expect(r.push(x)).toEqual(x);
    expect(r.flush().length).toBe(0);
  });

  for (const [inRate, outRate] of [
    [8000, 16_000],
    [48_000, 16_000],
    [44_100, 16_000],
  ] as const) {
    it(`${inRate} -> ${outRate}: no samples lost across chunks, sine keeps frequency and amplitude`, () => {
      const r = new StreamResampler(inRate, outRate);
      const chunk = Math.round(inRate / 50);
      const chunks = 100;
      const parts: Int16Array[] = [];
      let tin = 0;
      let tout = 0;
      for (let k = 0; k < chunks; k++) {
        const y = r.push(sine(chunk, inRate, 440, 10_000, k * chunk));
        tin += chunk;
        tout += y.length;
        parts.push(y);
        // running output never falls more than the filter delay (plus 1) behind the ideal
        expect(tout).toBeLessThanOrEqual(Math.ceil((tin * outRate) / inRate) + 1);
      }
      const tail = r.flush();
      parts.push(tail);
      tout += tail.length;
      expect(Math.abs(tout - (tin * outRate) / inRate)).toBeLessThanOrEqual(1);
      const all = new Int16Array(tout);
      let off = 0;
      for (const p of parts) {
        all.set(p, off);
        off += p.length;
      }
      // analyse the steady middle (skip filter warm-up and the zero-padded flush)
      const mid = all.subarray(outRate / 10, tout - outRate / 10);
      const { freq, amp } = analyse(mid, outRate);
      expect(freq).toBeGreaterThan(435);
      expect(freq).toBeLessThan(445);
      expect(amp).toBeGreaterThan(9_500);
      expect(amp).toBeLessThan(10_500);
    });
  }

  it('reset() starts a fresh stream with the same length accounting', () => {
    const r = new StreamResampler(8000, 16_000);
    r.push(sine(1000, 8000, 300, 5000));
    r.reset();
    let tout = 0;
    for (let k = 0; k < 10; k++) tout += r.push(sine(160, 8000, 300, 5000, k * 160)).length;
    tout += r.flush().length;
    expect(tout).toBe(3200);
  });

  // The recognizer hears 8 kHz telephone audio through this converter: the band up to 3.7 kHz
  // must reach it whole (libsamplerate's "medium" sinc, 90% of Nyquist, cut it, which cost 5
  // points of WER on mu-law), and what lies above sox's 91.3% passband must not fold back.
  for (const [freq, passes] of [
    [3700, true],
    [3900, false],
  ] as const) {
    it(`8000 -> 16000: a ${freq / 1000} kHz tone ${passes ? 'keeps' : 'loses'} its amplitude`, () => {
      const r = new StreamResampler(8000, 16_000);
      const x = sine(8000, 8000, freq, 10_000);
      const y = new Int16Array([...r.push(x), ...r.flush()]);
      let ss = 0;
      const mid = y.subarray(2000, y.length - 2000);
      for (const v of mid) ss += v * v;
      const amp = Math.sqrt(ss / mid.length) * Math.SQRT2;
      if (passes) expect(amp).toBeGreaterThan(9_900);
      else expect(amp).toBeLessThan(1_000);
      r.destroy();
    });
  }

  // Partials and the voice activity detector hear the audio only as it comes out: the filter
  // must not hold it back in large blocks (soxr's default DFT size would hold 8 kHz input up to
  // 220 ms).
  it('8000 -> 16000 in 20 ms pushes: output never more than 60 ms behind the input', () => {
    const r = new StreamResampler(8000, 16_000);
    let tin = 0;
    let tout = 0;
    let worst = 0;
    for (let k = 0; k < 500; k++) {
      tout += r.push(sine(160, 8000, 440, 5000, k * 160)).length;
      tin += 160;
      worst = Math.max(worst, tin * 2 - tout);
    }
    expect(worst).toBeGreaterThan(0);
    expect(worst).toBeLessThanOrEqual(960);
    r.destroy();
  });
});
