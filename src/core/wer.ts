// Word error rate: (substitutions + deletions + insertions) / reference words, on words
// normalised for case and punctuation. Pure; used by tests and benches.

export interface WerResult {
  /** Errors divided by reference words; 0 for two empty texts, 1 per word if ref is empty. */
  wer: number;
  substitutions: number;
  deletions: number;
  insertions: number;
  refWords: number;
}

/** Lower-case words with punctuation removed (apostrophes inside words kept: "don't"). */
export function normaliseWords(text: string): string[] {
  return text
    .normalize('NFKC')
    .toLowerCase()
    .replace(/[\u2018\u2019]/g, "'")
    .replace(/[^\p{L}\p{N}']+/gu, ' ')
    .split(' ')
    .map((w) => w.replace(/^'+|'+$/g, ''))
    .filter((w) => w.length > 0);
}

export function wordErrorRate(reference: string, hypothesis: string): WerResult {
  const ref = normaliseWords(reference);
  const hyp = normaliseWords(hypothesis);
  const n = ref.length;
  const m = hyp.length;
  // cost[i][j] = edit distance between ref[0..i) and hyp[0..j); ops tracked for the breakdown.
  type Cell = { cost: number; s: number; d: number; i: number };
  let prev: Cell[] = Array.from({ length: m + 1 }, (_, j) => ({ cost: j, s: 0, d: 0, i: j }));
  for (let i = 1; i <= n; i++) {
    const cur: Cell[] = [{ cost: i, s: 0, d: i, i: 0 }];
    for (let j = 1; j <= m; j++) {
      const diag = prev[j - 1]!;
      const same = ref[i - 1] === hyp[j - 1];
      let best: Cell = same ? { ...diag } : { cost: diag.cost + 1, s: diag.s + 1, d: diag.d, i: diag.i };
      const up = prev[j]!; // deletion of ref[i-1]
      if (up.cost + 1 < best.cost) best = { cost: up.cost + 1, s: up.s, d: up.d + 1, i: up.i };
      const left = cur[j - 1]!; // insertion of hyp[j-1]
      if (left.cost + 1 < best.cost) best = { cost: left.cost + 1, s: left.s, d: left.d, i: left.i + 1 };
      cur.push(best);
    }
    prev = cur;
  }
  const end = prev[m]!;
  const errors = end.s + end.d + end.i;
  return {
    wer: n === 0 ? (m === 0 ? 0 : m) : errors / n,
    substitutions: end.s,
    deletions: end.d,
    insertions: end.i,
    refWords: n,
  };
}
