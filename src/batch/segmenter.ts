// Where a batch file is cut into segments. Pure.
//
// Method: 20 ms frames, each with its energy in dB (RMS relative to full scale). The noise
// floor is the 10th percentile of frame energies; a frame is silent when it is below
// max(floor + 10 dB, -55 dBFS), capped at -25 dBFS so loud noise never counts as silence.
// A run of at least `minSilenceMs` (500) silent frames is a pause; the cut goes in its
// middle, so a word's tail is never clipped. Pauses closer than `minSegmentSeconds` (5 s)
// to the previous cut are passed over: the recognizer's language model needs context, and
// one-word segments are both slower and less accurate. A segment that would pass
// `maxSegmentSeconds` is cut at
// its quietest frame in the second half of the allowed window. Segments cover the whole
// file without gaps, so sample positions stay on the file's timeline; segments made only
// of silent frames are flagged so the runner can skip recognizing them.

export interface PlannedSegment {
  index: number;
  startSample: number;
  endSample: number;
  /** Every frame of the segment is below the silence threshold. */
  silent: boolean;
}

export interface SegmenterOptions {
  rate: number;
  maxSegmentSeconds: number;
  minSilenceMs?: number;
  minSegmentSeconds?: number;
}

const FRAME_MS = 20;

/** Samples per analysis frame at `rate`. */
export function frameSamples(rate: number): number {
  return Math.max(1, Math.round((rate * FRAME_MS) / 1000));
}

/** Energy in dBFS of each whole or final partial frame of `samples` (a multiple of the
 * frame length, except at the end of the audio, so a long file can be fed in pieces). */
export function frameEnergies(samples: Int16Array, frame: number): Float64Array {
  const n = Math.ceil(samples.length / frame);
  const out = new Float64Array(n);
  for (let f = 0; f < n; f++) {
    const end = Math.min(samples.length, (f + 1) * frame);
    let sum = 0;
    for (let i = f * frame; i < end; i++) sum += samples[i]! * samples[i]!;
    const rms = Math.sqrt(sum / Math.max(1, end - f * frame));
    out[f] = 20 * Math.log10(Math.max(rms, 1) / 32768);
  }
  return out;
}

export function planSegments(samples: Int16Array, opts: SegmenterOptions): PlannedSegment[] {
  return planFromEnergies(frameEnergies(samples, frameSamples(opts.rate)), samples.length, opts);
}

/** The plan from frame energies alone (see frameEnergies), for audio of `totalSamples`. */
export function planFromEnergies(energy: Float64Array, totalSamples: number, opts: SegmenterOptions): PlannedSegment[] {
  if (totalSamples === 0 || energy.length === 0) return [];
  const frame = frameSamples(opts.rate);
  const sorted = [...energy].sort((a, b) => a - b);
  const floor = sorted[Math.floor(sorted.length * 0.1)]!;
  const threshold = Math.min(-25, Math.max(floor + 10, -55));
  const silent = Array.from(energy, (e) => e < threshold);
  const minRun = Math.max(1, Math.round((opts.minSilenceMs ?? 500) / FRAME_MS));
  const maxFrames = Math.max(2, Math.floor((opts.maxSegmentSeconds * 1000) / FRAME_MS));
  const minFrames = Math.min(maxFrames, Math.floor(((opts.minSegmentSeconds ?? 5) * 1000) / FRAME_MS));

  // Cut points (frame indices) in the middle of every long-enough pause.
  const pauseCuts: number[] = [];
  for (let f = 0; f < silent.length;) {
    if (!silent[f]) {
      f++;
      continue;
    }
    let g = f;
    while (g < silent.length && silent[g]) g++;
    if (g - f >= minRun && f > 0 && g < silent.length) pauseCuts.push(Math.floor((f + g) / 2));
    f = g;
  }

  const cuts: number[] = [];
  let start = 0;
  let k = 0;
  const total = energy.length;
  // Silence before the first speech is a segment of its own (skipped, never recognized),
  // whatever its length, so the first spoken segment starts shortly before its speech: a
  // stereo call's channel is silent while the other party speaks first, and a segment
  // starting at 0 would put its words at the top of the call's merged transcript
  // (docs/calls.md). Half a pause of silence stays before the speech, as at any cut.
  let lead = 0;
  while (lead < total && silent[lead]) lead++;
  if (lead >= minRun && lead < total) {
    start = lead - Math.floor(minRun / 2);
    cuts.push(start);
  }
  while (start < total) {
    while (k < pauseCuts.length && pauseCuts[k]! < start + minFrames) k++;
    const next = k < pauseCuts.length ? pauseCuts[k]! : total;
    if (next - start <= maxFrames) {
      if (next < total) cuts.push(next);
      start = next;
      continue;
    }
    // Too long: cut at the quietest frame in the second half of the window.
    let best = start + Math.floor(maxFrames / 2);
    for (let f = best; f < start + maxFrames; f++) if (energy[f]! < energy[best]!) best = f;
    cuts.push(best);
    start = best;
  }

  const bounds = [0, ...cuts, total];
  const out: PlannedSegment[] = [];
  for (let i = 0; i + 1 < bounds.length; i++) {
    const a = bounds[i]!;
    const b = bounds[i + 1]!;
    if (b <= a) continue;
    out.push({
      index: out.length,
      startSample: a * frame,
      endSample: Math.min(totalSamples, b * frame),
      silent: silent.slice(a, b).every(Boolean),
    });
  }
  return out;
}
