// The SIPREC recording server's settings (docs/siprec.md, "Settings"): `scribed serve`'s
// --siprec-* flags over their environment variables (SCRIBED_SIPREC_PORT and the rest), which src/config.ts reads and hands in
// (the one place that reads the environment); validated here. Pure.
import { splitCidrList } from '../outbound-policy.js';
import { DEFAULT_MAX_BODY_BYTES } from './message.js';

export interface SiprecSettings {
  /** Address the SIP and RTP sockets bind to. */
  host: string;
  /** SIP port, UDP and TCP (0: any free one, for tests). */
  port: number;
  /** The address written in the SDP answer (c=) and Contact: where the SBC sends RTP. */
  mediaAddress: string;
  rtpPortMin: number;
  rtpPortMax: number;
  /** The scribed account recorded calls belong to (and are charged to). */
  accountId: string;
  /** A participant whose AOR or name matches this pattern (case-insensitive) is the agent. */
  agentPattern: string | undefined;
  /** Sources allowed to send SIP, as CIDRs; empty: any. */
  allowCidrs: readonly string[];
  maxBodyBytes: number;
  /** SIP over TLS on its own port (src/server/siprec/tls.ts): PEM certificate chain and key files. */
  tls?: SiprecTlsSettings;
  /** Take SDES keys (`a=crypto`) over UDP or TCP signalling too; by default only over TLS. */
  allowSdesWithoutTls?: boolean;
  /** A recording session with no RTP on any stream and no SIP in its dialog for this long ends
   * (its SBC is gone without a BYE); absent: DEFAULT_INACTIVITY_TIMEOUT_MS. */
  inactivityTimeoutMs?: number;
  /** The same while every stream is on hold (a=inactive, no RTP expected): only SIP counts;
   * absent: DEFAULT_HOLD_TIMEOUT_MS. */
  holdTimeoutMs?: number;
}

export interface SiprecTlsSettings {
  /** 0: any free one (tests). */
  port: number;
  certFile: string;
  keyFile: string;
}

/** No RTP and no SIP for a minute: the SBC is gone. Recorders' media-inactivity timers are of
 * this order (SBCs send RTP every 20 ms while a call is up, and a vanished one is the only
 * reason for a minute of nothing). */
export const DEFAULT_INACTIVITY_TIMEOUT_MS = 60_000;
/** On hold no RTP comes, and SBCs refresh a dialog with re-INVITE/UPDATE (session timers,
 * RFC 4028) at most every half hour by default: two hours without SIP is a vanished SBC. */
export const DEFAULT_HOLD_TIMEOUT_MS = 2 * 3600_000;

/** `20000-20999` as a range of RTP ports. */
export function parsePortRange(value: string): { min: number; max: number } {
  const m = /^(\d{1,5})-(\d{1,5})$/.exec(value.trim());
  if (!m) throw new Error(`RTP port range must be MIN-MAX, got ${JSON.stringify(value)}`);
  return { min: Number(m[1]), max: Number(m[2]) };
}

const IPV4 = /^(25[0-5]|2[0-4]\d|1?\d?\d)(\.(25[0-5]|2[0-4]\d|1?\d?\d)){3}$/;
/** An IPv4 or IPv6 address (the latter loosely: hex groups and colons). */
export function isIpAddress(s: string): boolean {
  return IPV4.test(s) || (/^[0-9A-Fa-f:.]+$/.test(s) && s.includes(':'));
}

export function checkSiprecSettings(s: SiprecSettings): SiprecSettings {
  if (!(Number.isInteger(s.port) && s.port >= 0 && s.port <= 65535)) throw new Error(`SIPREC port out of range: ${s.port}`);
  if (!(s.rtpPortMin >= 1024 && s.rtpPortMax <= 65535 && s.rtpPortMax - s.rtpPortMin >= 3))
    throw new Error('SIPREC RTP port range must lie within 1024-65535 and hold at least two even ports');
  if (!/^acc_[A-Za-z0-9]{20}$/.test(s.accountId)) throw new Error('SIPREC account must be an account id (acc_...)');
  if (!isIpAddress(s.mediaAddress)) throw new Error('SIPREC media address must be an IP address');
  if (s.agentPattern !== undefined) {
    try {
      new RegExp(s.agentPattern, 'i');
    } catch (err) {
      throw new Error(`SIPREC agent pattern: ${(err as Error).message}`);
    }
  }
  for (const cidr of s.allowCidrs) {
    const [ip, bits] = cidr.split('/');
    if (!ip || !isIpAddress(ip) || (bits !== undefined && !/^\d{1,3}$/.test(bits)))
      throw new Error(`SIPREC allowed source is not a CIDR: ${cidr}`);
  }
  if (s.tls && !(Number.isInteger(s.tls.port) && s.tls.port >= 0 && s.tls.port <= 65535))
    throw new Error(`SIPREC TLS port out of range: ${s.tls.port}`);
  for (const [name, ms] of [
    ['inactivity', s.inactivityTimeoutMs],
    ['hold', s.holdTimeoutMs],
  ] as const)
    if (ms !== undefined && !(Number.isInteger(ms) && ms >= 1000 && ms <= 24 * 3600_000))
      throw new Error(`SIPREC ${name} timeout must be 1..86400 seconds`);
  if (!(s.maxBodyBytes >= 1024 && s.maxBodyBytes <= 1024 * 1024)) throw new Error('SIPREC body limit must be 1024..1048576 bytes');
  return s;
}

/** `scribed serve`'s --siprec-* flags, each over its environment variable. */
export interface SiprecFlags {
  port?: number;
  account?: string;
  host?: string;
  mediaAddress?: string;
  rtpPorts?: string;
  agentPattern?: string;
  allowCidrs?: string[];
  maxBodyBytes?: number;
  inactivityTimeoutS?: number;
  holdTimeoutS?: number;
  tlsPort?: number;
  tlsCert?: string;
  tlsKey?: string;
  allowSdesWithoutTls?: boolean;
}

/** The settings from the flags over the environment (`env` reads a variable, empty as unset);
 * undefined (off) without a port. */
export function siprecSettingsFrom(host: string, f: SiprecFlags, env: (name: string) => string | undefined): SiprecSettings | undefined {
  const int = (flag: number | undefined, name: string): number | undefined => {
    if (flag !== undefined) return flag;
    const v = env(name);
    if (v === undefined) return undefined;
    const n = Number(v);
    if (!Number.isInteger(n)) throw new Error(`${name} must be an integer, got ${JSON.stringify(v)}`);
    return n;
  };
  const port = int(f.port, 'SCRIBED_SIPREC_PORT');
  if (port === undefined) return undefined;
  const accountId = f.account ?? env('SCRIBED_SIPREC_ACCOUNT');
  if (accountId === undefined)
    throw new Error('--siprec-port needs --siprec-account (SCRIBED_SIPREC_ACCOUNT): the account recorded calls belong to');
  const bind = f.host ?? env('SCRIBED_SIPREC_HOST') ?? host;
  const media = f.mediaAddress ?? env('SCRIBED_SIPREC_MEDIA_ADDRESS') ?? (bind === '0.0.0.0' || bind === '::' ? undefined : bind);
  if (media === undefined)
    throw new Error('--siprec-media-address (SCRIBED_SIPREC_MEDIA_ADDRESS) is needed when SIPREC binds to all addresses');
  const range = parsePortRange(f.rtpPorts ?? env('SCRIBED_SIPREC_RTP_PORTS') ?? '20000-20999');
  const tlsPort = int(f.tlsPort, 'SCRIBED_SIPREC_TLS_PORT');
  const certFile = f.tlsCert ?? env('SCRIBED_SIPREC_TLS_CERT');
  const keyFile = f.tlsKey ?? env('SCRIBED_SIPREC_TLS_KEY');
  if (tlsPort !== undefined && (certFile === undefined || keyFile === undefined))
    throw new Error('--siprec-tls-port (SCRIBED_SIPREC_TLS_PORT) needs --siprec-tls-cert and --siprec-tls-key (PEM files)');
  const sdes = env('SCRIBED_SIPREC_ALLOW_SDES_WITHOUT_TLS');
  if (sdes !== undefined && !/^(1|true|yes|on|0|false|no|off)$/i.test(sdes))
    throw new Error(`SCRIBED_SIPREC_ALLOW_SDES_WITHOUT_TLS must be true or false, got ${JSON.stringify(sdes)}`);
  const allowSdesWithoutTls = f.allowSdesWithoutTls ?? (sdes !== undefined ? /^(1|true|yes|on)$/i.test(sdes) : undefined);
  const ms = (flag: number | undefined, name: string) => {
    const seconds = int(flag, name);
    return seconds === undefined ? undefined : seconds * 1000;
  };
  return {
    host: bind,
    port,
    mediaAddress: media,
    rtpPortMin: range.min,
    rtpPortMax: range.max,
    accountId,
    agentPattern: f.agentPattern ?? env('SCRIBED_SIPREC_AGENT_PATTERN'),
    allowCidrs: f.allowCidrs ?? splitCidrList(env('SCRIBED_SIPREC_ALLOW_CIDRS') ?? ''),
    maxBodyBytes: int(f.maxBodyBytes, 'SCRIBED_SIPREC_MAX_BODY_BYTES') ?? DEFAULT_MAX_BODY_BYTES,
    inactivityTimeoutMs: ms(f.inactivityTimeoutS, 'SCRIBED_SIPREC_INACTIVITY_TIMEOUT_S'),
    holdTimeoutMs: ms(f.holdTimeoutS, 'SCRIBED_SIPREC_HOLD_TIMEOUT_S'),
    tls: tlsPort !== undefined ? { port: tlsPort, certFile: certFile!, keyFile: keyFile! } : undefined,
    allowSdesWithoutTls,
  };
}
