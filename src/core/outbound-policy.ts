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
// IPv6 forms that carry an IPv4 address are judged by that address: IPv4-mapped
// (::ffff:a.b.c.d, BlockList does this itself), NAT64 (64:ff9b::/96) and 6to4 (2002::/16).
import net from 'node:net';

export type AddressClass =
  | 'public'
  | 'loopback'
  | 'private'
  | 'link-local'
  | 'metadata'
  | 'unspecified'
  | 'multicast'
  | 'broadcast'
  | 'reserved';

/** Classes no setting opens. */
export const NEVER_ALLOWED: ReadonlySet<AddressClass> = new Set(['link-local', 'metadata', 'unspecified', 'multicast', 'broadcast', 'reserved']);

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
  ['metadata', [['169.254.169.254', 32], ['169.254.170.2', 32], ['100.100.100.200', 32], ['168.63.129.16', 32]]],
  ['link-local', [['169.254.0.0', 16]]],
  ['multicast', [['224.0.0.0', 4]]],
  ['broadcast', [['255.255.255.255', 32]]],
  ['reserved', [['240.0.0.0', 4], ['192.0.2.0', 24], ['198.51.100.0', 24], ['203.0.113.0', 24]]],
  ['loopback', [['127.0.0.0', 8]]],
  ['private', [['10.0.0.0', 8], ['172.16.0.0', 12], ['192.168.0.0', 16], ['100.64.0.0', 10], ['198.18.0.0', 15], ['192.0.0.0', 24]]],
];

const V6: ReadonlyArray<readonly [AddressClass, readonly Range[]]> = [
  ['unspecified', [['::', 128]]],
  ['loopback', [['::1', 128]]],
  // AWS Nitro instance metadata over IPv6 (with its DNS and NTP neighbours).
  ['metadata', [['fd00:ec2::254', 128], ['fd00:ec2::253', 128], ['fd00:ec2::123', 128]]],
  ['link-local', [['fe80::', 10]]],
  ['multicast', [['ff00::', 8]]],
  // IPv4-compatible (deprecated), discard-only, documentation.
  ['reserved', [['::', 96], ['100::', 64], ['2001:db8::', 32], ['3fff::', 20]]],
  ['private', [['fc00::', 7], ['fec0::', 10], ['64:ff9b:1::', 48]]],
];

/** Host names that name this host or a metadata service, refused before any resolution
 * (RFC 6761 `localhost`; the metadata names clouds resolve to link-local addresses). */
const LOOPBACK_NAMES = /^(?:localhost|(?:[^.]+\.)*localhost|localhost\.localdomain|ip6-localhost|ip6-loopback)$/;
const METADATA_NAMES = new Set(['metadata', 'metadata.google.internal', 'metadata.goog', 'instance-data', 'instance-data.ec2.internal', 'metadata.tencentyun.com']);

function hex16(a: number, b: number): string {
  return ((a << 8) | b).toString(16);
}

const CLASSES: ReadonlyArray<readonly [AddressClass, net.BlockList]> = (() => {
  const order: AddressClass[] = ['unspecified', 'metadata', 'link-local', 'multicast', 'broadcast', 'loopback', 'reserved', 'private'];
  const lists = new Map<AddressClass, net.BlockList>(order.map((c) => [c, new net.BlockList()]));
  for (const [cls, ranges] of V4) {
    const list = lists.get(cls)!;
    for (const [addr, prefix] of ranges) {
      list.addSubnet(addr, prefix, 'ipv4'); // also matches ::ffff:a.b.c.d
      list.addSubnet(`64:ff9b::${addr}`, 96 + prefix, 'ipv6'); // NAT64 (RFC 6052)
      const [a, b, c, d] = addr.split('.').map(Number) as [number, number, number, number];
      list.addSubnet(`2002:${hex16(a, b)}:${hex16(c, d)}::`, 16 + prefix, 'ipv6'); // 6to4
    }
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

/** The class of an IP address (v4 or v6, any notation node:net reads). Throws on a non-IP. */
export function classifyAddress(address: string): AddressClass {
  const ip = ipLiteral(address);
  if (!ip) throw new Error(`not an IP address: ${JSON.stringify(address)}`);
  for (const [cls, list] of CLASSES) if (list.check(ip.address, ip.family)) return cls;
  return 'public';
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

export class OutboundPolicy {
  readonly #allowPrivate: boolean;
  readonly #allowed = new net.BlockList();
  readonly #hasAllowlist: boolean;

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
  }

  /** May a request connect to this IP address? */
  checkAddress(address: string): Verdict {
    const cls = classifyAddress(address);
    if (cls === 'public') return { allowed: true, class: cls };
    if (NEVER_ALLOWED.has(cls)) return { allowed: false, class: cls, reason: `${cls} address` };
    const ip = ipLiteral(address)!;
    if (cls === 'private' && this.#allowPrivate) return { allowed: true, class: cls };
    if (this.#hasAllowlist && this.#allowed.check(ip.address, ip.family)) return { allowed: true, class: cls };
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
