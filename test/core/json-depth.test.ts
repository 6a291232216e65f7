import { describe, expect, it } from 'vitest';
import { MAX_JSON_DEPTH, jsonNestsDeeperThan } from '../../src/core/json-depth.js';

const nest = (n: number) => '{"a":['.repeat(n) + '1' + ']}'.repeat(n);

describe('jsonNestsDeeperThan', () => {
  it('counts arrays and objects, and only outside strings', () => {
    expect(jsonNestsDeeperThan('[[1]]', 2)).toBe(false);
    expect(jsonNestsDeeperThan('[[[1]]]', 2)).toBe(true);
    expect(jsonNestsDeeperThan('{"a":{"b":1},"c":{"d":2}}', 2)).toBe(false);
    expect(jsonNestsDeeperThan(`{"s":"${'['.repeat(1000)}"}`, 2)).toBe(false);
    expect(jsonNestsDeeperThan(`{"s":"\\"[[[[","t":1}`, 1)).toBe(false);
    expect(jsonNestsDeeperThan('"just a string"', 0)).toBe(false);
  });

  it('finds a 100k-deep body without recursing, and passes every shallow one', () => {
    expect(jsonNestsDeeperThan('['.repeat(100_000) + ']'.repeat(100_000))).toBe(true);
    expect(jsonNestsDeeperThan(nest(MAX_JSON_DEPTH / 2))).toBe(false); // 2 levels per step
    expect(jsonNestsDeeperThan(nest(MAX_JSON_DEPTH / 2 + 1))).toBe(true);
  });

  it('agrees with the parsed value on random JSON', () => {
    const depthOf = (v: unknown): number => (v !== null && typeof v === 'object' ? 1 + Math.max(0, ...Object.values(v).map(depthOf)) : 0);
    let seed = 7;
    const rnd = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const gen = (d: number): unknown =>
      d === 0 || rnd() < 0.3 ? (rnd() < 0.5 ? '[{"}]' : 1) : rnd() < 0.5 ? [gen(d - 1), gen(d - 1)] : { k: gen(d - 1), '[': gen(d - 1) };
    for (let i = 0; i < 300; i++) {
      const v = gen(8);
      const depth = depthOf(v);
      expect(jsonNestsDeeperThan(JSON.stringify(v), depth)).toBe(false);
      if (depth > 0) expect(jsonNestsDeeperThan(JSON.stringify(v), depth - 1)).toBe(true);
    }
  });
});
