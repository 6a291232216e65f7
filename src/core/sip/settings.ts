// The SIPREC recording server's settings (docs/siprec.md, "Settings"): validated here, read from
// flags and the environment by src/config.ts. Pure.

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
}

export interface SiprecTlsSettings {
  /** 0: any free one (tests). */
  port: number;
  certFile: string;
  keyFile: string;
}

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
  if (!(s.maxBodyBytes >= 1024 && s.maxBodyBytes <= 1024 * 1024)) throw new Error('SIPREC body limit must be 1024..1048576 bytes');
  return s;
}
