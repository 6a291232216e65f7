import { expect } from 'vitest';
import { wordErrorRate } from '../../src/core/wer.js';

/** Each turn's text is real speech of its own clip: nearer its own reference than any other
 * turn's, and under `maxWer`. Attribution, not accuracy: one short clip's word error rate
 * moves with any recognizer setting, the nearest reference does not. */
export function expectTurnsHeardOnTheirLegs(turns: ReadonlyArray<readonly [reference: string, text: string]>, maxWer = 0.8): void {
  for (const [reference, text] of turns) {
    const own = wordErrorRate(reference, text).wer;
    expect(own, text).toBeLessThan(maxWer);
    for (const [other] of turns) if (other !== reference) expect(own, text).toBeLessThan(wordErrorRate(other, text).wer);
  }
}
