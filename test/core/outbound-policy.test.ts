// The callback destination policy (src/core/outbound-policy.ts): which addresses are
// loopback, private, link-local, metadata ... in every notation (IPv4-mapped, NAT64, 6to4),
// what the safe default refuses, what the operator's settings open and what they never open;
// and the settings' parsing in src/config.ts.
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import {
  classifyAddress,
  DEFAULT_OUTBOUND_POLICY,
  embeddedIPv4,
  OutboundPolicy,
  parseCidr,
  splitCidrList,
} from '../../src/core/outbound-policy.js';
import { loadConfig } from '../../src/config.js';

describe('classifyAddress', () => {
  const table: Array<[string, string]> = [
    ['8.8.8.8', 'public'],
    ['172.32.0.1', 'public'],
    ['2606:4700::1111', 'public'],
    ['::ffff:8.8.8.8', 'public'],
    ['64:ff9b::808:808', 'public'],
    ['127.0.0.1', 'loopback'],
    ['127.200.3.4', 'loopback'],
    ['::1', 'loopback'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['0:0:0:0:0:ffff:7f00:1', 'loopback'],
    ['64:ff9b::7f00:1', 'loopback'],
    ['2002:7f00:1::1', 'loopback'],
    ['10.1.2.3', 'private'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['100.64.0.1', 'private'],
    ['100.127.255.254', 'private'],
    ['fc00::1', 'private'],
    ['fd12:3456::1', 'private'],
    ['::ffff:10.0.0.1', 'private'],
    ['::ffff:192.168.0.1', 'private'],
    ['::ffff:100.64.0.1', 'private'],
    ['169.254.169.254', 'metadata'],
    ['::ffff:169.254.169.254', 'metadata'],
    ['::ffff:a9fe:a9fe', 'metadata'],
    ['fd00:ec2::254', 'metadata'],
    ['100.100.100.200', 'metadata'],
    ['169.254.1.1', 'link-local'],
    ['fe80::1', 'link-local'],
    ['fe80::1%eth0', 'link-local'],
    ['::ffff:169.254.3.4', 'link-local'],
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'unspecified'],
    ['::', 'unspecified'],
    ['::ffff:0.0.0.0', 'unspecified'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['ff02::1', 'multicast'],
    ['::ffff:224.0.0.1', 'multicast'],
    ['255.255.255.255', 'broadcast'],
    ['::ffff:255.255.255.255', 'broadcast'],
    ['240.0.0.1', 'reserved'],
    ['::127.0.0.1', 'reserved'],
    ['2001:db8::1', 'reserved'],
    // IPv4-translated (::ffff:0:0:0/96), the form the probe found counted as public.
    ['::ffff:0:7f00:1', 'loopback'],
    ['::ffff:0:a9fe:a9fe', 'metadata'],
    ['::ffff:0:10.0.0.1', 'private'],
    ['::ffff:0:808:808', 'public'],
    // Teredo (2001::/32): the client address is the last 32 bits inverted (127.0.0.1, 169.254.169.254).
    ['2001:0:4136:e378:8000:63bf:80ff:fffe', 'loopback'],
    ['2001::ffff:5601:5601', 'metadata'],
    ['2001:0:4136:e378:8000:63bf:f7f7:f7f7', 'public'],
    // Local-use NAT64 (64:ff9b:1::/48): private, and loopback when it carries loopback.
    ['64:ff9b:1::808:808', 'private'],
    ['64:ff9b:1::7f00:1', 'loopback'],
    ['64:ff9b:1:7f00:1::', 'loopback'],
    ['2002:a9fe:a9fe::', 'metadata'],
  ];
  it.each(table)('%s is %s', (address, cls) => {
    expect(classifyAddress(address)).toBe(cls);
  });

  // Every IPv6 form that carries an IPv4 address is judged exactly as that address.
  const v4 = fc.tuple(fc.nat(255), fc.nat(255), fc.nat(255), fc.nat(255));
  const hex = (a: number, b: number) => ((a << 8) | b).toString(16);
  const inv = (x: number) => x ^ 0xff;
  const forms: Record<string, (o: [number, number, number, number], r: number) => string> = {
    mapped: ([a, b, c, d]) => `::ffff:${hex(a, b)}:${hex(c, d)}`,
    mappedDotted: ([a, b, c, d]) => `::ffff:${a}.${b}.${c}.${d}`,
    translated: ([a, b, c, d]) => `::ffff:0:${hex(a, b)}:${hex(c, d)}`,
    nat64: ([a, b, c, d]) => `64:ff9b::${hex(a, b)}:${hex(c, d)}`,
    sixToFour: ([a, b, c, d], r) => `2002:${hex(a, b)}:${hex(c, d)}:${(r & 0xffff).toString(16)}::1`,
    teredo: ([a, b, c, d], r) =>
      `2001:0:${(r & 0xffff).toString(16)}:${((r >> 3) & 0xffff).toString(16)}:8000:${((r >> 7) & 0xffff).toString(16)}:${hex(inv(a), inv(b))}:${hex(inv(c), inv(d))}`,
  };
  // Biased towards the closed ranges, so every class is drawn often.
  const interesting = fc.oneof(
    v4,
    fc.constantFrom<[number, number, number, number]>(
      [127, 0, 0, 1],
      [169, 254, 169, 254],
      [10, 0, 0, 1],
      [192, 168, 1, 1],
      [0, 0, 0, 0],
      [224, 0, 0, 1],
      [255, 255, 255, 255],
      [100, 100, 100, 200],
    ),
    fc.tuple(fc.constantFrom(127, 10, 169, 172, 192, 100), fc.nat(255), fc.nat(255), fc.nat(255)),
  );
  it.each(Object.keys(forms))('the %s form of any IPv4 address is classed as that address', (form) => {
    fc.assert(
      fc.property(interesting, fc.nat(), (o, r) => {
        const text = forms[form]!(o, r);
        expect(embeddedIPv4(text)).toContain(o.join('.'));
        expect(classifyAddress(text), text).toBe(classifyAddress(o.join('.')));
      }),
      { numRuns: 2000 },
    );
  });

  it('throws on something that is not an address', () => {
    expect(() => classifyAddress('example.com')).toThrow(/not an IP/);
  });
});

describe('the default policy', () => {
  const policy = new OutboundPolicy(DEFAULT_OUTBOUND_POLICY);

  it('allows public addresses only', () => {
    for (const a of ['8.8.8.8', '2606:4700::1111', '::ffff:8.8.8.8']) expect(policy.checkAddress(a).allowed, a).toBe(true);
    for (const a of [
      '127.0.0.1',
      '::1',
      '::ffff:127.0.0.1',
      '10.0.0.1',
      '::ffff:10.0.0.1',
      'fd12::1',
      '100.64.0.1',
      '169.254.169.254',
      'fe80::1',
      '0.0.0.0',
      '224.0.0.1',
      '255.255.255.255',
      '64:ff9b::a00:1',
    ]) {
      expect(policy.checkAddress(a).allowed, a).toBe(false);
    }
  });

  it('decides literal hosts and loopback/metadata names before any resolution, and leaves other names to connect time', () => {
    expect(policy.checkHost('[::ffff:7f00:1]')).toMatchObject({ allowed: false, class: 'loopback' });
    expect(policy.checkHost('[::1]')).toMatchObject({ allowed: false, class: 'loopback' });
    expect(policy.checkHost('127.0.0.1')).toMatchObject({ allowed: false, class: 'loopback' });
    expect(policy.checkHost('localhost')).toMatchObject({ allowed: false, class: 'loopback' });
    expect(policy.checkHost('LocalHost.')).toMatchObject({ allowed: false, class: 'loopback' });
    expect(policy.checkHost('api.localhost')).toMatchObject({ allowed: false, class: 'loopback' });
    expect(policy.checkHost('metadata.google.internal')).toMatchObject({ allowed: false, class: 'metadata' });
    expect(policy.checkHost('metadata.google.internal.')).toMatchObject({ allowed: false, class: 'metadata' });
    expect(policy.checkHost('8.8.8.8')).toMatchObject({ allowed: true });
    expect(policy.checkHost('hooks.example.com')).toBeNull();
  });
});

describe('operator settings', () => {
  it('allowPrivate opens private ranges (and their mapped forms) but not loopback, link-local or metadata', () => {
    const p = new OutboundPolicy({ allowPrivate: true, allowCidrs: [] });
    for (const a of ['10.0.0.1', '172.20.1.1', '192.168.0.10', '100.64.1.1', 'fd12::1', '::ffff:192.168.0.10'])
      expect(p.checkAddress(a).allowed, a).toBe(true);
    for (const a of ['127.0.0.1', '::1', '::ffff:127.0.0.1', '169.254.169.254', 'fd00:ec2::254', '100.100.100.200', 'fe80::1', '0.0.0.0']) {
      expect(p.checkAddress(a).allowed, a).toBe(false);
    }
    expect(p.checkHost('localhost')).toMatchObject({ allowed: false });
    expect(p.checkHost('[fd00:ec2::254]')).toMatchObject({ allowed: false, class: 'metadata' });
  });

  it('an allowlisted CIDR opens exactly that loopback or private range, in every notation', () => {
    const p = new OutboundPolicy({ allowPrivate: false, allowCidrs: ['127.0.0.1/32', '10.20.0.0/16', 'fd12:3456::/32'] });
    for (const a of ['127.0.0.1', '::ffff:127.0.0.1', '10.20.3.4', '::ffff:10.20.3.4', 'fd12:3456::9'])
      expect(p.checkAddress(a).allowed, a).toBe(true);
    for (const a of ['127.0.0.2', '::1', '10.21.0.1', '192.168.0.1', 'fd12:3457::9']) expect(p.checkAddress(a).allowed, a).toBe(false);
    expect(p.checkHost('localhost')).toBeNull(); // resolved at connect time; only 127.0.0.1 may be used
  });

  it('no setting opens link-local, metadata, unspecified, multicast or broadcast space', () => {
    for (const entry of [
      '169.254.0.0/16',
      '169.254.169.254',
      'fe80::/10',
      'fd00:ec2::254/128',
      '0.0.0.0/0',
      '224.0.0.0/4',
      '255.255.255.255/32',
      '::/0',
    ]) {
      expect(() => new OutboundPolicy({ allowPrivate: true, allowCidrs: [entry] }), entry).toThrow(/may never reach/);
    }
    // A wide allowlist entry still leaves the closed classes inside it closed.
    const p = new OutboundPolicy({ allowPrivate: true, allowCidrs: ['128.0.0.0/1', 'fd00::/8'] });
    expect(p.checkAddress('169.254.169.254').allowed).toBe(false);
    expect(p.checkAddress('fd00:ec2::254').allowed).toBe(false);
    expect(p.checkAddress('255.255.255.255').allowed).toBe(false);
  });

  it('parses CIDRs and lists strictly', () => {
    expect(parseCidr('10.0.0.0/8')).toEqual({ address: '10.0.0.0', prefix: 8, family: 'ipv4' });
    expect(parseCidr('::1')).toEqual({ address: '::1', prefix: 128, family: 'ipv6' });
    expect(() => parseCidr('10.0.0.0/33')).toThrow(/prefix/);
    expect(() => parseCidr('10.0.0.0/')).toThrow(/prefix/);
    expect(() => parseCidr('intranet')).toThrow(/not a CIDR/);
    expect(splitCidrList(' 127.0.0.1/32, 10.0.0.0/8  fd00::/8,')).toEqual(['127.0.0.1/32', '10.0.0.0/8', 'fd00::/8']);
  });
});

describe('config', () => {
  const saved = { ...process.env };
  afterEach(() => {
    for (const k of ['SCRIBED_CALLBACK_ALLOW_PRIVATE', 'SCRIBED_CALLBACK_ALLOW_CIDRS']) {
      if (saved[k] === undefined) delete process.env[k];
      else process.env[k] = saved[k];
    }
  });

  it('defaults to the safe policy', () => {
    delete process.env.SCRIBED_CALLBACK_ALLOW_PRIVATE;
    delete process.env.SCRIBED_CALLBACK_ALLOW_CIDRS;
    const cfg = loadConfig({});
    expect(cfg.callbackAllowPrivate).toBe(false);
    expect(cfg.callbackAllowCidrs).toEqual([]);
  });

  it('reads the environment, flags winning', () => {
    process.env.SCRIBED_CALLBACK_ALLOW_PRIVATE = 'true';
    process.env.SCRIBED_CALLBACK_ALLOW_CIDRS = '127.0.0.1/32,10.20.0.0/16';
    const cfg = loadConfig({});
    expect(cfg.callbackAllowPrivate).toBe(true);
    expect(cfg.callbackAllowCidrs).toEqual(['127.0.0.1/32', '10.20.0.0/16']);
    expect(loadConfig({ callbackAllowPrivate: false, callbackAllowCidrs: [] })).toMatchObject({
      callbackAllowPrivate: false,
      callbackAllowCidrs: [],
    });
  });

  it('refuses a bad value at start-up instead of guessing', () => {
    process.env.SCRIBED_CALLBACK_ALLOW_PRIVATE = 'maybe';
    expect(() => loadConfig({})).toThrow(/SCRIBED_CALLBACK_ALLOW_PRIVATE/);
    delete process.env.SCRIBED_CALLBACK_ALLOW_PRIVATE;
    process.env.SCRIBED_CALLBACK_ALLOW_CIDRS = '169.254.169.254/32';
    expect(() => loadConfig({})).toThrow(/metadata/);
    process.env.SCRIBED_CALLBACK_ALLOW_CIDRS = '10.0.0.0/40';
    expect(() => loadConfig({})).toThrow(/SCRIBED_CALLBACK_ALLOW_CIDRS/);
  });
});
