// The console's pure modules (src/console/public/protocol.js, audio.js), checked in Node
// against the server's own codecs: the frame header the server decodes, the mu-law the server
// decodes, the resampler's pass band and stop band, and the capture buffer's placement of
// unacknowledged audio across epochs (docs/protocol.md, Resume).
import { describe, expect, it } from 'vitest';
import { decodeAudioFrame } from '../../src/core/frame.js';
import { mulawToPcm16, pcm16ToMulaw as serverMulaw } from '../../src/core/audio/encodings.js';
import {
  CaptureBuffer,
  encodeFrame,
  finalRuns,
  fragmentWithoutTicket,
  historyLink,
  parseFragment,
  streamSocketUrl,
  watchSocketUrl,
} from '../../src/console/public/protocol.js';
import { Resampler, encodeSamples, pcm16ToMulaw } from '../../src/console/public/audio.js';

const PAGE = 'http://scribed.example:8080/console/';

describe('console protocol module', () => {
  it('frames decode on the server as sent: epoch, 64-bit sampleOffset, payload', () => {
    const payload = new Uint8Array([1, 2, 3, 4, 5, 6]);
    const offset = 2 ** 40 + 12345;
    const frame = decodeAudioFrame(encodeFrame(7, offset, payload), 'pcm_s16le_16000', 131072);
    expect(frame.epoch).toBe(7);
    expect(Number(frame.sampleOffset)).toBe(offset);
    expect([...frame.payload]).toEqual([...payload]);
    expect(() => encodeFrame(1, -1, payload)).toThrow(RangeError);
  });

  it('the fragment gives session and ticket; links must be http(s); the ticket leaves the address', () => {
    const f = parseFragment(
      '#session=rts_abc&ticket=tkt_x_y&renew=https%3A%2F%2Fapp.example%2Frenew&history=https%3A%2F%2Fapp.example%2Ft%2F%7BtranscriptionId%7D%3Fformat%3D%7Bformat%7D',
      PAGE,
    );
    expect(f.session).toBe('rts_abc');
    expect(f.ticket).toBe('tkt_x_y');
    expect(f.renew?.toString()).toBe('https://app.example/renew');
    expect(f.origin).toBe('https://app.example');
    expect(historyLink(f.history!, 'stt_1', 'srt', PAGE)).toBe('https://app.example/t/stt_1?format=srt');
    expect(f.problems).toEqual([]);

    const evil = parseFragment(
      '#session=rts_abc&ticket=tkt_a&renew=javascript%3Aalert(1)&history=data%3Atext%2Fhtml%2Cx&origin=javascript%3Ax',
      PAGE,
    );
    expect(evil.renew).toBeNull();
    expect(evil.history).toBeNull();
    expect(evil.origin).toBeNull();
    expect(evil.problems).toHaveLength(3);
    expect(parseFragment('#session=..%2F..%2Fadmin&ticket=sk_live', PAGE)).toMatchObject({ session: null, ticket: null });

    expect(fragmentWithoutTicket('#session=rts_abc&ticket=tkt_x&renew=https%3A%2F%2Fa')).toBe('#session=rts_abc&renew=https%3A%2F%2Fa');
    expect(streamSocketUrl(PAGE, 'rts_abc', 'tkt_x')).toBe(
      'ws://scribed.example:8080/sound_clone/api/v1/stt/realtime/sessions/rts_abc/stream?ticket=tkt_x',
    );
    expect(streamSocketUrl('https://s.example/console/', 'rts_abc', 'tkt_x')).toMatch(/^wss:\/\/s\.example\//);
  });

  it('mode=watch opens the read-only watch socket; any other mode is reported and the page streams', () => {
    expect(parseFragment('#session=rts_abc&ticket=tkt_x', PAGE).watch).toBe(false);
    expect(parseFragment('#session=rts_abc&ticket=tkt_x&mode=watch', PAGE)).toMatchObject({ watch: true, problems: [] });
    expect(parseFragment('#session=rts_abc&ticket=tkt_x&mode=stream', PAGE)).toMatchObject({ watch: false, problems: [] });
    const odd = parseFragment('#session=rts_abc&ticket=tkt_x&mode=spy', PAGE);
    expect(odd.watch).toBe(false);
    expect(odd.problems).toHaveLength(1);
    expect(watchSocketUrl(PAGE, 'rts_abc', 'tkt_x')).toBe(
      'ws://scribed.example:8080/sound_clone/api/v1/stt/realtime/sessions/rts_abc/events?ticket=tkt_x',
    );
    expect(watchSocketUrl('https://s.example/console/', 'rts_abc', 'tkt_x')).toMatch(/^wss:\/\/s\.example\/.*\/events\?ticket=tkt_x$/);
  });

  it('finals: words under 0.5 confidence are marked; null confidences and text that differs from the words mark nothing', () => {
    const words = [
      { word: 'he', confidence: 0.93 },
      { word: 'was', confidence: 0.31 },
      { word: 'not', confidence: null },
    ];
    expect(finalRuns({ text: 'he was not', words })).toEqual([
      { text: 'he', low: false, confidence: 0.93 },
      { text: 'was', low: true, confidence: 0.31 },
      { text: 'not', low: false, confidence: null },
    ]);
    expect(finalRuns({ text: 'he was', words })).toEqual([{ text: 'he was', low: false, confidence: null }]);
    expect(finalRuns({ text: '' })).toEqual([{ text: '', low: false, confidence: null }]);
  });

  it('capture buffer: frames placed by epoch and sampleOffset, acked audio dropped, resent from the server count after a resume', () => {
    const b = new CaptureBuffer(1, 8000 * 10);
    // A session that already holds 1000 samples (epoch 1, offset 1000).
    expect(b.ready(1, 1000, '1000')).toEqual([]);
    const f1 = decodeAudioFrame(b.add(new Uint8Array(160).fill(1))!, 'mulaw_8000', 131072);
    expect([f1.epoch, Number(f1.sampleOffset)]).toEqual([1, 1000]);
    b.add(new Uint8Array(160).fill(2));
    b.add(new Uint8Array(160).fill(3));
    b.ack('1160');
    expect(b.pendingSamples).toBe(320);
    // The socket drops; capture goes on into the buffer.
    b.detached();
    expect(b.add(new Uint8Array(160).fill(4))).toBeNull();
    expect(b.captured).toBe(1640);
    // Resume: epoch 2 starts at the server's count, 1200 (part of the second frame arrived).
    const resend = b.ready(2, 0, '1200').map((x) => decodeAudioFrame(x, 'mulaw_8000', 131072));
    expect(resend.map((x) => [x.epoch, Number(x.sampleOffset), x.payload.length, x.payload[0]])).toEqual([
      [2, 0, 120, 2],
      [2, 120, 160, 3],
      [2, 280, 160, 4],
    ]);
    const next = decodeAudioFrame(b.add(new Uint8Array(160))!, 'mulaw_8000', 131072);
    expect([next.epoch, Number(next.sampleOffset)]).toEqual([2, 440]);
    expect(() => new CaptureBuffer(2, 100).add(new Uint8Array(2))).toThrow(/no ready/);
    const small = new CaptureBuffer(2, 100);
    small.ready(1, 0, '0');
    expect(() => small.add(new Uint8Array(202))).toThrow(RangeError);
  });
});

describe('console audio module', () => {
  it('mu-law matches the server codec for every 16-bit sample', () => {
    for (let x = -32768; x <= 32767; x++) {
      if (pcm16ToMulaw(x) !== serverMulaw(x)) throw new Error(`differs at ${x}`);
    }
    const bytes = encodeSamples('mulaw_8000', Float32Array.from([0.5, -0.25]));
    expect(Math.abs(mulawToPcm16(bytes[0]!) - 16384)).toBeLessThan(600);
    expect(Math.abs(mulawToPcm16(bytes[1]!) + 8192)).toBeLessThan(300);
    const pcm = encodeSamples('pcm_s16le_16000', Float32Array.from([1, -1, 0.5]));
    expect(Array.from(new Int16Array(pcm.buffer))).toEqual([32767, -32767, 16384]);
  });

  /** Amplitude of `freq` in `x` (sampled at `rate`), by correlation, skipping the edges. */
  function amplitude(x: Float32Array, rate: number, freq: number): number {
    let re = 0;
    let im = 0;
    const from = Math.floor(x.length / 4);
    const to = Math.floor((3 * x.length) / 4);
    for (let i = from; i < to; i++) {
      re += x[i]! * Math.cos((2 * Math.PI * freq * i) / rate);
      im += x[i]! * Math.sin((2 * Math.PI * freq * i) / rate);
    }
    return (2 * Math.hypot(re, im)) / (to - from);
  }

  function tone(rate: number, freq: number, seconds: number): Float32Array {
    return Float32Array.from({ length: rate * seconds }, (_, i) => 0.5 * Math.sin((2 * Math.PI * freq * i) / rate));
  }

  /** Push in 128-sample render quanta, as the AudioWorklet does. */
  function resample(x: Float32Array, from: number, to: number): Float32Array {
    const r = new Resampler(from, to);
    const parts: Float32Array[] = [];
    for (let i = 0; i < x.length; i += 128) parts.push(r.push(x.subarray(i, i + 128)));
    parts.push(r.flush());
    const out = new Float32Array(parts.reduce((n, p) => n + p.length, 0));
    let at = 0;
    for (const p of parts) {
      out.set(p, at);
      at += p.length;
    }
    return out;
  }

  it.each([
    [48000, 8000],
    [44100, 8000],
    [48000, 16000],
    [44100, 16000],
    [16000, 48000],
  ])('resamples %i Hz to %i Hz: length kept, speech band kept, no aliasing', (from, to) => {
    const seconds = 2;
    const pass = resample(tone(from, 1000, seconds), from, to);
    expect(Math.abs(pass.length - to * seconds)).toBeLessThanOrEqual(1);
    expect(amplitude(pass, to, 1000)).toBeGreaterThan(0.49);
    expect(amplitude(pass, to, 1000)).toBeLessThan(0.51);
    if (to < from) {
      // A tone above the new Nyquist would alias to |to - f|; it must be gone (-40 dB).
      const f = to * 0.6;
      const out = resample(tone(from, f, seconds), from, to);
      expect(amplitude(out, to, to - f)).toBeLessThan(0.005);
    }
  });
});
