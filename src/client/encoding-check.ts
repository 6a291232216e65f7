// The first seconds of a file or stdin, judged before a session exists (docs/ingest.md
// "Input checks"): `scribed stream` reads them ahead, asks FirstSecondsCheck, and then streams
// them and the rest as if nothing had been read. A likely wrong --encoding is then refused
// before anything is created or billed.
import { FirstSecondsCheck, type Implausibility } from '../core/audio/sniff.js';
import type { InputEncodingName } from '../core/audio/encodings.js';

export interface JudgedInput {
  /** null: plausible; undefined: too little audio to judge. */
  verdict: Implausibility | null | undefined;
  /** The whole input, from its first byte (what was read ahead included). */
  chunks: AsyncIterable<Buffer>;
}

export async function judgeFirstSeconds(input: AsyncIterable<Buffer>, encoding: InputEncodingName, seconds = 3): Promise<JudgedInput> {
  const check = new FirstSecondsCheck(encoding, seconds);
  const it = input[Symbol.asyncIterator]();
  const head: Buffer[] = [];
  let verdict: Implausibility | null | undefined;
  let failure: { err: unknown } | null = null;
  let ended = false;
  try {
    while (verdict === undefined) {
      const r = await it.next();
      if (r.done) {
        ended = true;
        verdict = check.finish();
        break;
      }
      head.push(r.value);
      verdict = check.add(r.value);
    }
  } catch (err) {
    // Reported where the input is read, as for an input that fails later.
    failure = { err };
  }
  async function* all(): AsyncGenerator<Buffer> {
    yield* head;
    if (failure) throw failure.err;
    if (ended) return;
    for (;;) {
      const r = await it.next();
      if (r.done) return;
      yield r.value;
    }
  }
  return { verdict, chunks: all() };
}
