// A leg's loudness over time (docs/analytics.md, "Loudness"): the RMS level of each second of
// its audio in dBFS, accumulated as the audio is taken (one multiply-add a sample, so it runs
// in the session's intake; bench/analytics.ts measures it) and summarised when the call ends.
// Pure: the session hands the samples in; the store keeps the finished track.
//
// dBFS here is the RMS of the samples against a full-scale square wave (32768): a full-scale
// sine reads -3.01 dBFS, digital silence the floor, LEVEL_FLOOR_DBFS. That is what ffmpeg's
// volumedetect calls mean_volume, which the tests compare with.

export const LEVEL_FRAME_MS = 1000;
export const LEVEL_FLOOR_DBFS = -100;
/** A level track is bounded: 24 hours of 1 s frames. Audio past it is not measured. */
export const MAX_LEVEL_FRAMES = 86_400;

/** One leg's levels: frame i covers [i*frameMs, (i+1)*frameMs) of the leg's own time line;
 * null where no audio was measured (a frame the node that took the session over never saw). */
export interface LevelTrack {
  frameMs: number;
  dbfs: Array<number | null>;
}

export function toDbfs(meanSquare: number): number {
  return meanSquare > 0 ? Math.max(LEVEL_FLOOR_DBFS, 10 * Math.log10(meanSquare)) : LEVEL_FLOOR_DBFS;
}

/** Per-frame sums of squares, fed samples at their session-wide sample position. */
export class LevelTrackBuilder {
  private readonly frameSamples: number;
  private readonly sums: number[] = [];
  private readonly counts: number[] = [];

  constructor(
    readonly rate: number,
    readonly frameMs = LEVEL_FRAME_MS,
  ) {
    this.frameSamples = Math.max(1, Math.round((rate * frameMs) / 1000));
  }

  add(at: bigint, samples: Int16Array): void {
    let pos = Number(at);
    let i = 0;
    while (i < samples.length) {
      const frame = Math.floor(pos / this.frameSamples);
      if (frame >= MAX_LEVEL_FRAMES) return;
      const upto = Math.min(samples.length, i + ((frame + 1) * this.frameSamples - pos));
      let acc = 0;
      for (let k = i; k < upto; k++) {
        const v = samples[k]!;
        acc += v * v;
      }
      while (this.sums.length <= frame) {
        this.sums.push(0);
        this.counts.push(0);
      }
      this.sums[frame]! += acc / (32768 * 32768);
      this.counts[frame]! += upto - i;
      pos += upto - i;
      i = upto;
    }
  }

  get empty(): boolean {
    return this.sums.length === 0;
  }

  track(): LevelTrack {
    return { frameMs: this.frameMs, dbfs: this.sums.map((s, i) => (this.counts[i]! > 0 ? round1(toDbfs(s / this.counts[i]!)) : null)) };
  }
}

function round1(x: number): number {
  return Math.round(x * 10) / 10;
}

/** A stored track merged with a newer one from the same leg (the session resumed on another
 * node, or closed after a pause): the newer frames win where both measured. */
export function mergeLevelTracks(older: LevelTrack | null, newer: LevelTrack): LevelTrack {
  if (!older || older.frameMs !== newer.frameMs) return newer;
  const n = Math.max(older.dbfs.length, newer.dbfs.length);
  const dbfs: Array<number | null> = [];
  for (let i = 0; i < n; i++) dbfs.push(newer.dbfs[i] ?? older.dbfs[i] ?? null);
  return { frameMs: newer.frameMs, dbfs };
}

export interface Interval {
  startMs: number;
  endMs: number;
}

export interface LoudnessSummary {
  frameMs: number;
  /** Power mean of the frames in which the leg talks for at least half the frame, dBFS; null
   * when it never does (or nothing was measured). */
  talkDbfs: number | null;
  /** Power mean of every measured frame. */
  meanDbfs: number | null;
  /** The loudest frame. */
  peakDbfs: number | null;
  track: Array<number | null>;
}

function powerMean(levels: number[]): number | null {
  if (levels.length === 0) return null;
  return round1(toDbfs(levels.reduce((a, l) => a + 10 ** (l / 10), 0) / levels.length));
}

/** The leg's loudness: its track and three figures over it. */
export function summariseLoudness(track: LevelTrack | null, talk: readonly Interval[]): LoudnessSummary | null {
  if (!track) return null;
  const measured: number[] = [];
  const talking: number[] = [];
  track.dbfs.forEach((l, i) => {
    if (l === null) return;
    measured.push(l);
    const from = i * track.frameMs;
    const to = from + track.frameMs;
    let overlap = 0;
    for (const t of talk) overlap += Math.max(0, Math.min(to, t.endMs) - Math.max(from, t.startMs));
    if (overlap * 2 >= track.frameMs) talking.push(l);
  });
  return {
    frameMs: track.frameMs,
    talkDbfs: powerMean(talking),
    meanDbfs: powerMean(measured),
    peakDbfs: measured.length ? measured.reduce((a, b) => Math.max(a, b)) : null,
    track: track.dbfs,
  };
}
