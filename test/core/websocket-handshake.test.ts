// The upgrade form check refuses exactly what ws's handleUpgrade would refuse, so a request
// that passes is one ws upgrades (and ws never answers in its own text/html shape).
import { describe, expect, it } from 'vitest';
import { upgradeProblem } from '../../src/core/websocket-handshake.js';

const good = {
  upgrade: 'websocket',
  connection: 'Upgrade',
  'sec-websocket-version': '13',
  'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
};

describe('upgradeProblem', () => {
  it('takes a well-formed upgrade, version 13 or 8, any Upgrade case, a token list of protocols', () => {
    expect(upgradeProblem('GET', good)).toBeNull();
    expect(upgradeProblem('GET', { ...good, 'sec-websocket-version': '8', upgrade: 'WebSocket' })).toBeNull();
    expect(upgradeProblem('GET', { ...good, 'sec-websocket-protocol': 'scribed.v1, chat' })).toBeNull();
  });

  it('refuses every malformed part with UPGRADE_INVALID', () => {
    const cases: Array<[string, Record<string, string | undefined>]> = [
      ['POST', good],
      ['GET', { ...good, upgrade: 'h2c' }],
      ['GET', { ...good, upgrade: undefined }],
      ['GET', { ...good, 'sec-websocket-version': '12' }],
      ['GET', { ...good, 'sec-websocket-version': undefined }],
      ['GET', { ...good, 'sec-websocket-version': '13.0x' }],
      ['GET', { ...good, 'sec-websocket-key': undefined }],
      ['GET', { ...good, 'sec-websocket-key': 'short==' }],
      ['GET', { ...good, 'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ' }],
      ['GET', { ...good, 'sec-websocket-protocol': '' }],
      ['GET', { ...good, 'sec-websocket-protocol': 'a,,b' }],
      ['GET', { ...good, 'sec-websocket-protocol': 'a b' }],
      ['GET', { ...good, 'sec-websocket-protocol': 'a, a' }],
    ];
    for (const [method, headers] of cases) {
      const refusal = upgradeProblem(method, headers);
      expect(refusal?.error.code, JSON.stringify([method, headers])).toBe('UPGRADE_INVALID');
    }
  });

  it('names the versions it speaks when the version is wrong, and only then', () => {
    expect(upgradeProblem('GET', { ...good, 'sec-websocket-version': '12' })?.headers).toEqual({ 'sec-websocket-version': '13, 8' });
    expect(upgradeProblem('GET', { ...good, 'sec-websocket-key': 'x' })?.headers).toEqual({});
  });
});
