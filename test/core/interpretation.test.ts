import { describe, expect, it } from 'vitest';
import {
  RATE_VERSION,
  codePoints,
  cycleCharacters,
  retryRefusal,
  retryRequestHash,
  validateProjectRequest,
  validateRetryRequest,
} from '../../src/core/interpretation.js';

const now = new Date('2026-11-23T10:00:00Z');
const plan = { nextReservationCycle: 3, characters: 450n, rateVersion: RATE_VERSION, expiresAt: '2026-11-23T10:15:00.000Z' };
const req = { nextReservationCycle: 3, characters: 450n, rateVersion: RATE_VERSION };

describe('cycle price', () => {
  it('charges code points times the language rate, rounded up, with a floor of 100', () => {
    expect(cycleCharacters(300n, 'fr')).toBe(300n);
    expect(cycleCharacters(301n, 'ja')).toBe(452n); // 451.5 rounds up
    expect(cycleCharacters(300n, 'zh-Hans')).toBe(450n);
    expect(cycleCharacters(10n, 'fr')).toBe(100n);
    expect(cycleCharacters(0n, 'de')).toBe(100n);
  });

  it('counts code points, not UTF-16 units', () => {
    expect(codePoints('😀😀')).toBe(2);
    expect('😀😀'.length).toBe(4);
  });
});

describe('retry check', () => {
  it('accepts exactly the current unexpired plan of a FAILED_RELEASED target', () => {
    expect(retryRefusal({ state: 'FAILED_RELEASED', plan }, req, now)).toBeNull();
  });
  it('refuses other states, a missing plan, an expired plan and any changed value', () => {
    expect(retryRefusal({ state: 'QUEUED', plan }, req, now)).toMatch(/QUEUED/);
    expect(retryRefusal({ state: 'FAILED_RELEASED', plan: null }, req, now)).toMatch(/retry-plan/);
    expect(retryRefusal({ state: 'FAILED_RELEASED', plan }, req, new Date('2026-11-23T10:15:00Z'))).toMatch(/expired/);
    expect(retryRefusal({ state: 'FAILED_RELEASED', plan }, { ...req, characters: 449n }, now)).toMatch(/do not match/);
    expect(retryRefusal({ state: 'FAILED_RELEASED', plan }, { ...req, nextReservationCycle: 2 }, now)).toMatch(/do not match/);
    expect(retryRefusal({ state: 'FAILED_RELEASED', plan: { ...plan, rateVersion: 'old' } }, { ...req, rateVersion: 'old' }, now)).toMatch(
      /rate table/,
    );
  });
  it('binds the key to the target and every plan value', () => {
    const h = retryRequestHash('ip_a', 'it_a', req);
    expect(retryRequestHash('ip_a', 'it_a', { ...req })).toBe(h);
    expect(retryRequestHash('ip_a', 'it_b', req)).not.toBe(h);
    expect(retryRequestHash('ip_a', 'it_a', { ...req, characters: 451n })).not.toBe(h);
  });
  it('shapes the body: integers and a string rateVersion', () => {
    expect(validateRetryRequest({ nextReservationCycle: 2, characters: 5, rateVersion: 'v' })).toEqual({
      nextReservationCycle: 2,
      characters: 5n,
      rateVersion: 'v',
    });
    expect(() => validateRetryRequest({ nextReservationCycle: 2.5, characters: 5, rateVersion: 'v' })).toThrow(/nextReservationCycle/);
    expect(() => validateRetryRequest({ nextReservationCycle: 2, characters: '5', rateVersion: 'v' })).toThrow(/characters/);
  });
});

describe('project request', () => {
  it('accepts a minimal project and refuses duplicates, bad codes and more than 10 targets', () => {
    expect(validateProjectRequest({ title: 'T', sourceLanguage: 'en', targetLanguages: ['pt-BR'] }).source).toBeNull();
    expect(() => validateProjectRequest({ title: 'T', sourceLanguage: 'en', targetLanguages: ['fr', 'fr'] })).toThrow(/distinct/);
    expect(() => validateProjectRequest({ title: 'T', sourceLanguage: 'English', targetLanguages: ['fr'] })).toThrow(/sourceLanguage/);
    const eleven = ['fr', 'de', 'es', 'it', 'ja', 'ko', 'zh', 'ar', 'hi', 'pt', 'nl'];
    expect(() => validateProjectRequest({ title: 'T', sourceLanguage: 'en', targetLanguages: eleven })).toThrow(/1 to 10/);
    expect(validateProjectRequest({ title: 'T', sourceLanguage: 'en', targetLanguages: eleven.slice(0, 10) }).targetLanguages).toHaveLength(
      10,
    );
  });
});
