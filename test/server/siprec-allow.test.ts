// Which sources may send SIP to the recording server (SCRIBED_SIPREC_ALLOW_CIDRS): IPv4, IPv6
// and IPv4-mapped IPv6 addresses (a dual-stack socket's view of an IPv4 SBC).
import { describe, expect, it } from 'vitest';
import { SourceAllowList } from '../../src/server/siprec/transport.js';

describe('SIPREC source allow list', () => {
  it('allows the listed networks and hosts only', () => {
    const list = new SourceAllowList(['10.0.0.0/8', '192.0.2.7', '2001:db8::/32']);
    expect(list.allows('10.20.30.40')).toBe(true);
    expect(list.allows('::ffff:10.1.2.3')).toBe(true);
    expect(list.allows('192.0.2.7')).toBe(true);
    expect(list.allows('192.0.2.8')).toBe(false);
    expect(list.allows('2001:db8::5')).toBe(true);
    expect(list.allows('2001:db9::5')).toBe(false);
    expect(list.allows('127.0.0.1')).toBe(false);
  });
});
