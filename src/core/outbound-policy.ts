// Where the service may send requests on a user's behalf (today: voice design callbacks).
// Pure: classifies IP addresses and host names with node:net's BlockList and decides against
// the operator's setting; the connect-time guard that applies it is
// src/outbound/guarded-transport.ts. docs/security.md, "Outbound requests".
//
// Classes, first match wins:
//  - never allowed, whatever the operator sets: unspecified (0.0.0.0/8, ::), cloud metadata
//    addresses, link-local (169.254/16, fe80::/10), multicast (224/4, ff00::/8), broadcast
//    (255.255.255.255) and reserved space (240/4, documentation nets, 100::/64, the
//    deprecated IPv4-compatible ::/96);
//  - allowed only when the operator opens them: loopback (127/8, ::1) through an allowlisted
//    CIDR, private (10/8, 172.16/12, 192.168/16, 100.64/10 CGNAT, 198.18/15, 192.0.0/24,
//    fc00::/7, fec0::/10, 64:ff9b:1::/48) by `allowPrivate` or an allowlisted CIDR;
//  - public: everything else.
// IPv6 forms that carry an IPv4 address are judged by that address (embeddedIPv4 below):
// IPv4-mapped (::ffff:0:0/96), IPv4-translated (::ffff:0:0:0/96), NAT64 (64:ff9b::/96),
// 6to4 (2002::/16) and Teredo (2001::/32, whose client address is stored inverted). The
// local-use NAT64 prefix 64:ff9b:1::/48 is private itself, and at least as closed as the
// address it embeds.
import net from 'node:net';

export type AddressClass =
  'public' | 'loopback' | 'private' | 'link-local' | 'metadata' | 'unspecified' | 'multicast' | 'broadcast' | 'reserved';

/** Classes no setting opens. */
export const NEVER_ALLOWED: ReadonlySet<AddressClass> = new Set([
  'link-local',
  'metadata',
  'unspecified',
  'multicast',
  'broadcast',
  'reserved',
]);

export interface OutboundPolicySettings {
  /** Open the private ranges (not loopback): 10/8, 172.16/12, 192.168/16, 100.64/10, fc00::/7 ... */
  allowPrivate: boolean;
  /** Open these loopback or private ranges (CIDR, or a single address). */
  allowCidrs: readonly string[];
}

export const DEFAULT_OUTBOUND_POLICY: OutboundPolicySettings = Object.freeze({ allowPrivate: false, allowCidrs: Object.freeze([]) });

export type Verdict = { allowed: true; class: AddressClass } | { allowed: false; class: AddressClass; reason: string };

type Range = readonly [address: string, prefix: number];

// IPv4 ranges per class; each is also registered in its NAT64 and 6to4 forms.
const V4: ReadonlyArray<readonly [AddressClass, readonly Range[]]> = [
  ['unspecified', [['0.0.0.0', 8]]],
  // AWS/GCP/Azure/OpenStack (169.254.169.254), AWS ECS task metadata, Alibaba, Azure WireServer.
  [
    'metadata',
    [
      ['169.254.169.254', 32],
      ['169.254.170.2', 32],
      ['100.100.100.200', 32],
      ['168.63.129.16', 32],
    ],
  ],
  ['link-local', [['169.254.0.0', 16]]],
  ['multicast', [['224.0.0.0', 4]]],
  ['broadcast', [['255.255.255.255', 32]]],
  [
    'reserved',
    [
      ['240.0.0.0', 4],
      ['192.0.2.0', 24],
      ['198.51.100.0', 24],
      ['203.0.113.0', 24],
    ],
  ],
  ['loopback', [['127.0.0.0', 8]]],
  [
    'private',
    [
      ['10.0.0.0', 8],
      ['172.16.0.0', 12],
      ['192.168.0.0', 16],
      ['100.64.0.0', 10],
      ['198.18.0.0', 15],
      ['192.0.0.0', 24],
    ],
  ],
];

const V6: ReadonlyArray<readonly [AddressClass, readonly Range[]]> = [
  ['unspecified', [['::', 128]]],
  ['loopback', [['::1', 128]]],
  // AWS Nitro instance metadata over IPv6 (with its DNS and NTP neighbours).
  [
    'metadata',
    [
      ['fd00:ec2::254', 128],
      ['fd00:ec2::253', 128],
      ['fd00:ec2::123', 128],
    ],
  ],
  ['link-local', [['fe80::', 10]]],
  ['multicast', [['ff00::', 8]]],
  // IPv4-compatible (deprecated), discard-only, documentation.
  [
    'reserved',
    [
      ['::', 96],
      ['100::', 64],
      ['2001:db8::', 32],
      ['3fff::', 20],
    ],
  ],
  [
    'private',
    [
      ['fc00::', 7],
      ['fec0::', 10],
      ['64:ff9b:1::', 48],
    ],
  ],
];

/** Host names that name this host or a metadata service, refused before any resolution
 * (RFC 6761 `localhost`; the metadata names clouds resolve to link-local addresses). */
const LOOPBACK_NAMES = /^(?:localhost|(?:[^.]+\.)*localhost|localhost\.localdomain|ip6-localhost|ip6-loopback)$/;
const METADATA_NAMES = new Set([
  'metadata',
  'metadata.google.internal',
  'metadata.goog',
  'instance-data',
  'instance-data.ec2.internal',
  'metadata.tencentyun.com',
]);

const CLASSES: ReadonlyArray<readonly [AddressClass, net.BlockList]> = (() => {
  const order: AddressClass[] = ['unspecified', 'metadata', 'link-local', 'multicast', 'broadcast', 'loopback', 'reserved', 'private'];
  const lists = new Map<AddressClass, net.BlockList>(order.map((c) => [c, new net.BlockList()]));
  for (const [cls, ranges] of V4) {
    const list = lists.get(cls)!;
    for (const [addr, prefix] of ranges) list.addSubnet(addr, prefix, 'ipv4');
  }
  for (const [cls, ranges] of V6) {
    const list = lists.get(cls)!;
    for (const [addr, prefix] of ranges) list.addSubnet(addr, prefix, 'ipv6');
  }
  // Loopback before reserved: ::1 lies inside the IPv4-compatible ::/96.
  return order.map((c) => [c, lists.get(c)!] as const);
})();

/** An IP literal without brackets or zone (`fe80::1%eth0` -> `fe80::1`); null when not an IP. */
export function ipLiteral(host: string): { address: string; family: 'ipv4' | 'ipv6' } | null {
  let h = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  const zone = h.indexOf('%');
  if (zone >= 0 && net.isIPv6(h)) h = h.slice(0, zone);
  const v = net.isIP(h);
  return v === 4 ? { address: h, family: 'ipv4' } : v === 6 ? { address: h, family: 'ipv6' } : null;
}

/** The 16 bytes of an IPv6 address node:net accepts (`::` and a trailing dotted quad
 * included). Written here because node:net checks and compares addresses but hands out no
 * bytes, and the embedded forms below need bit positions BlockList cannot express (Teredo's
 * client address sits after 64 bits that vary). */
export function ipv6Bytes(address: string): Uint8Array {
  let text = address;
  const out = new Uint8Array(16);
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  let tail: number[] = [];
  if (dotted) {
    tail = dotted.slice(1, 5).map(Number);
    text = `${text.slice(0, dotted.index)}0:0`;
  }
  const [head, rest] = text.includes('::') ? (text.split('::') as [string, string]) : [text, null];
  const words = (part: string) => (part === '' ? [] : part.split(':').map((w) => parseInt(w, 16)));
  const front = words(head);
  const back = rest === null ? [] : words(rest);
  const all = [...front, ...new Array<number>(8 - front.length - back.length).fill(0), ...back];
  all.forEach((w, i) => {
    out[i * 2] = (w >> 8) & 0xff;
    out[i * 2 + 1] = w & 0xff;
  });
  if (dotted) out.set(tail, 12);
  return out;
}

function v4At(bytes: Uint8Array, offset: number, invert = false): string {
  return Array.from(bytes.subarray(offset, offset + 4), (b) => (invert ? b ^ 0xff : b)).join('.');
}

function prefixIs(bytes: Uint8Array, prefix: readonly number[]): boolean {
  return prefix.every((b, i) => bytes[i] === b);
}

/** The IPv4 addresses an IPv6 address carries, by the standard that places them: the address
 * a packet to it is handed on to (or could be, for the local-use NAT64 prefix, whose
 * translator may use a /48 or a /96 layout: both are returned). Empty for other addresses. */
export function embeddedIPv4(address: string): string[] {
  const b = ipv6Bytes(address);
  const zeros = (n: number) => new Array<number>(n).fill(0);
  // IPv4-mapped ::ffff:a.b.c.d and IPv4-translated ::ffff:0:a.b.c.d (RFC 4291, RFC 2765).
  if (prefixIs(b, [...zeros(10), 0xff, 0xff])) return [v4At(b, 12)];
  if (prefixIs(b, [...zeros(8), 0xff, 0xff, 0, 0])) return [v4At(b, 12)];
  // NAT64 well-known prefix 64:ff9b::/96 (RFC 6052).
  if (prefixIs(b, [0, 0x64, 0xff, 0x9b, ...zeros(8)])) return [v4At(b, 12)];
  // Local-use NAT64 64:ff9b:1::/48 (RFC 8215): /48 layout (bits 48-63, then 72-87) or /96.
  // A layout whose bits are all zero is not the one in use (the other one carries the address).
  if (prefixIs(b, [0, 0x64, 0xff, 0x9b, 0, 1])) {
    const readings = [`${b[6]}.${b[7]}.${b[9]}.${b[10]}`, v4At(b, 12)];
    const used = readings.filter((r) => r !== '0.0.0.0');
    return used.length > 0 ? used : ['0.0.0.0'];
  }
  // 6to4 2002:AABB:CCDD::/16 (RFC 3056).
  if (prefixIs(b, [0x20, 0x02])) return [v4At(b, 2)];
  // Teredo 2001:0::/32 (RFC 4380): the client's address is the last 32 bits, inverted.
  if (prefixIs(b, [0x20, 0x01, 0, 0])) return [v4At(b, 12, true)];
  return [];
}

/** Classes from most to least closed, to judge an address by the most closed of its readings. */
const SEVERITY: readonly AddressClass[] = [
  'unspecified',
  'metadata',
  'link-local',
  'multicast',
  'broadcast',
  'reserved',
  'loopback',
  'private',
  'public',
];

function moreClosed(a: AddressClass, b: AddressClass): AddressClass {
  return SEVERITY.indexOf(a) <= SEVERITY.indexOf(b) ? a : b;
}

function classifyLiteral(ip: { address: string; family: 'ipv4' | 'ipv6' }): AddressClass {
  for (const [cls, list] of CLASSES) if (list.check(ip.address, ip.family)) return cls;
  return 'public';
}

/** The class of an IP address (v4 or v6, any notation node:net reads). Throws on a non-IP.
 * An IPv6 address that carries an IPv4 address is judged by the most closed of its own class
 * (the local-use NAT64 prefix is private) and the embedded address's. */
export function classifyAddress(address: string): AddressClass {
  const ip = ipLiteral(address);
  if (!ip) throw new Error(`not an IP address: ${JSON.stringify(address)}`);
  const own = classifyLiteral(ip);
  if (ip.family === 'ipv4') return own;
  const embedded = embeddedIPv4(ip.address);
  if (embedded.length === 0) return own;
  // The prefixes' own classes (6to4, Teredo and the mapped forms are public space) say nothing
  // of where the packet goes; the local-use NAT64 prefix is private whatever it embeds.
  let cls: AddressClass = own === 'private' ? 'private' : 'public';
  for (const v4 of embedded) cls = moreClosed(cls, classifyLiteral({ address: v4, family: 'ipv4' }));
  return cls;
}

/** A CIDR (`10.1.0.0/16`, `fd12:3456::/48`) or a single address; throws with the reason. */
export function parseCidr(text: string): { address: string; prefix: number; family: 'ipv4' | 'ipv6' } {
  const t = text.trim();
  const slash = t.lastIndexOf('/');
  const ip = ipLiteral(slash >= 0 ? t.slice(0, slash) : t);
  if (!ip) throw new Error(`not a CIDR or IP address: ${JSON.stringify(text)}`);
  const max = ip.family === 'ipv4' ? 32 : 128;
  const p = slash >= 0 ? t.slice(slash + 1) : String(max);
  if (!/^\d{1,3}$/.test(p) || Number(p) > max) throw new Error(`bad prefix length in ${JSON.stringify(text)} (0..${max})`);
  return { ...ip, prefix: Number(p) };
}

/** The operator's list as written in an environment variable: commas and/or spaces. */
export function splitCidrList(text: string): string[] {
  return text.split(/[\s,]+/).filter((s) => s !== '');
}

/** How the operator opens a class of destination (for the refusal's message): the flag by name,
 * since a developer's receiver on this host is the common case and the flag is the answer.
 * `host`: the refused host as the URL wrote it (an address gives the exact CIDR to open). */
export function openedBy(cls: AddressClass, host: string): string {
  if (NEVER_ALLOWED.has(cls)) return 'no setting opens it';
  const ip = ipLiteral(host);
  const cidr = ip ? `${ip.address}/${ip.family === 'ipv4' ? 32 : 128}` : '127.0.0.1/32';
  if (cls === 'loopback')
    return `the server's operator opens it with --callback-allow-cidr ${cidr} (SCRIBED_CALLBACK_ALLOW_CIDRS), then restarts it, or adds ${cidr} to the --callback-allow-cidr-file and sends SIGHUP`;
  return `the server's operator opens it with --callback-allow-private or --callback-allow-cidr ${ip ? cidr : 'CIDR'} (SCRIBED_CALLBACK_ALLOW_PRIVATE, SCRIBED_CALLBACK_ALLOW_CIDRS), then restarts it, or adds ${ip ? cidr : 'the CIDR'} to the --callback-allow-cidr-file and sends SIGHUP`;
}

export class OutboundPolicy {
  #allowPrivate: boolean;
  #allowed = new net.BlockList();
  #hasAllowlist: boolean;
  #cidrs: readonly string[];

  /** Throws when an allowlist entry is malformed or names a class no setting can open. */
  constructor(settings: OutboundPolicySettings) {
    this.#allowPrivate = settings.allowPrivate;
    for (const entry of settings.allowCidrs) {
      const c = parseCidr(entry);
      const cls = classifyAddress(c.address);
      if (NEVER_ALLOWED.has(cls)) throw new Error(`callback allowlist entry ${entry} is ${cls} space, which callbacks may never reach`);
      this.#allowed.addSubnet(c.address, c.prefix, c.family);
    }
    this.#hasAllowlist = settings.allowCidrs.length > 0;
    this.#cidrs = Object.freeze([...settings.allowCidrs]);
  }

  /** The allowlist as given. */
  get allowCidrs(): readonly string[] {
    return this.#cidrs;
  }

  /** New settings in place (the operator's reload, SIGHUP): every check from now on, by every
   * holder of this policy, uses them. Throws, changing nothing, when an entry is invalid. */
  replace(settings: OutboundPolicySettings): void {
    const next = new OutboundPolicy(settings);
    this.#allowPrivate = next.#allowPrivate;
    this.#allowed = next.#allowed;
    this.#hasAllowlist = next.#hasAllowlist;
    this.#cidrs = next.#cidrs;
  }

  /** An allowlist entry covers the address itself, or every IPv4 address it carries. */
  #allowlisted(ip: { address: string; family: 'ipv4' | 'ipv6' }): boolean {
    if (this.#allowed.check(ip.address, ip.family)) return true;
    if (ip.family === 'ipv4') return false;
    const embedded = embeddedIPv4(ip.address);
    return embedded.length > 0 && embedded.every((v4) => this.#allowed.check(v4, 'ipv4'));
  }

  /** May a request connect to this IP address? */
  checkAddress(address: string): Verdict {
    const cls = classifyAddress(address);
    if (cls === 'public') return { allowed: true, class: cls };
    if (NEVER_ALLOWED.has(cls)) return { allowed: false, class: cls, reason: `${cls} address` };
    const ip = ipLiteral(address)!;
    if (cls === 'private' && this.#allowPrivate) return { allowed: true, class: cls };
    if (this.#hasAllowlist && this.#allowlisted(ip)) return { allowed: true, class: cls };
    return { allowed: false, class: cls, reason: `${cls} address not allowed by the operator` };
  }

  /** A URL's host (as `new URL(...).hostname` gives it, brackets allowed): the verdict when
   * the host alone decides (an IP literal, a loopback or metadata name), null when the name
   * must be resolved, which happens only when connecting (src/outbound/guarded-transport.ts). */
  checkHost(host: string): Verdict | null {
    const ip = ipLiteral(host);
    if (ip) return this.checkAddress(ip.address);
    const name = host.toLowerCase().replace(/\.+$/, '');
    if (METADATA_NAMES.has(name)) return { allowed: false, class: 'metadata', reason: 'metadata service name' };
    if (LOOPBACK_NAMES.test(name)) {
      // Only as open as the loopback addresses the name stands for.
      const v4 = this.checkAddress('127.0.0.1');
      const v6 = this.checkAddress('::1');
      if (v4.allowed || v6.allowed) return null;
      return { allowed: false, class: 'loopback', reason: 'loopback name not allowed by the operator' };
    }
    return null;
  }
}
