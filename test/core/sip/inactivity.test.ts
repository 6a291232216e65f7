// When a quiet recording session is over (src/core/sip/inactivity.ts): RTP or SIP keeps it alive,
// a held session waits for the hold limit, and a held stream is one the SBC sends nothing on.
import { describe, expect, it } from 'vitest';
import { inactivityCheckEveryMs, inactivityVerdict, sendsNothing } from '../../../src/core/sip/inactivity.js';

const limits = { inactivityMs: 60_000, holdMs: 7_200_000 };

describe('SIPREC inactivity', () => {
  it('ends a session only when neither RTP nor SIP came for the limit', () => {
    expect(inactivityVerdict({ lastSipMs: 0, lastRtpMs: 59_000, held: false }, 100_000, limits)).toBeNull();
    expect(inactivityVerdict({ lastSipMs: 50_000, lastRtpMs: -Infinity, held: false }, 100_000, limits)).toBeNull();
    expect(inactivityVerdict({ lastSipMs: 0, lastRtpMs: 40_000, held: false }, 100_000, limits)).toBe('inactivity');
  });

  it('gives a held session the hold limit, from its last SIP or RTP', () => {
    expect(inactivityVerdict({ lastSipMs: 0, lastRtpMs: -Infinity, held: true }, 3_600_000, limits)).toBeNull();
    expect(inactivityVerdict({ lastSipMs: 0, lastRtpMs: -Infinity, held: true }, 7_200_000, limits)).toBe('hold');
  });

  it('counts inactive and recvonly streams as held, sendonly and sendrecv as sending', () => {
    expect(['inactive', 'recvonly', 'sendonly', 'sendrecv'].map((d) => sendsNothing(d as never))).toEqual([true, true, false, false]);
    expect(inactivityCheckEveryMs(limits)).toBe(5000);
    expect(inactivityCheckEveryMs({ inactivityMs: 1000, holdMs: 5000 })).toBe(250);
  });
});
