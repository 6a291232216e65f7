// SIP over UDP and TCP on one port (RFC 3261 section 18): datagrams are one message each; a TCP
// connection's bytes are cut into messages by Content-Length (core/sip/message.ts). Responses go
// back the way the request came: to the datagram's source address and port (as `rport` would,
// which is what works behind NAT), or on the same TCP connection. A message that cannot be read
// is answered 400 or 413 when its headers can address an answer, else dropped; a TCP stream that
// cannot be framed is answered and closed. SIP over TLS (tls.ts), when configured, on its own
// port: its connections framed as TCP's.
import dgram from 'node:dgram';
import net from 'node:net';
import type { FastifyBaseLogger } from 'fastify';
import type { SiprecTlsSettings } from '../../core/sip/settings.js';
import { SipTlsListener } from './tls.js';
import { SipParseError, SipStreamFramer, parseSipMessage, writeResponse, type SipMessage } from '../../core/sip/message.js';

export type TransportName = 'udp' | 'tcp' | 'tls';

export interface Peer {
  transport: TransportName;
  address: string;
  port: number;
  send(bytes: Buffer): void;
}

export interface SipHandler {
  message(m: SipMessage, peer: Peer): void;
  /** A message refused before it reached the handler (answered already when it could be). */
  refused(err: SipParseError, peer: Peer): void;
}

const MAX_TCP_CONNECTIONS = 1024;
const TCP_IDLE_MS = 10 * 60_000;

export class SipTransport {
  private udp: dgram.Socket | null = null;
  private tcp: net.Server | null = null;
  private tls: SipTlsListener | null = null;
  private readonly connections = new Set<net.Socket>();

  constructor(
    private readonly handler: SipHandler,
    private readonly maxBodyBytes: number,
    private readonly log: FastifyBaseLogger,
  ) {}

  get udpPort(): number | null {
    return this.udp ? this.udp.address().port : null;
  }

  get tcpPort(): number | null {
    const a = this.tcp?.address();
    return a && typeof a === 'object' ? a.port : null;
  }

  /** The port of a transport (the Via and Contact of what goes out on it). */
  portOf(transport: TransportName): number | null {
    return transport === 'tls' ? (this.tls?.port ?? null) : transport === 'tcp' ? this.tcpPort : this.udpPort;
  }

  /** SIGHUP: the TLS certificate read again; null without TLS, false when the old one stays. */
  reloadTls(): boolean | null {
    return this.tls?.reload() ?? null;
  }

  async listen(host: string, port: number, tlsSettings?: SiprecTlsSettings): Promise<void> {
    const udp = dgram.createSocket(host.includes(':') ? 'udp6' : 'udp4');
    await new Promise<void>((resolve, reject) => {
      udp.once('error', reject);
      udp.bind(port, host, () => {
        udp.off('error', reject);
        resolve();
      });
    });
    udp.on('error', (err) => this.log.warn({ err }, 'SIP UDP socket error'));
    udp.on('message', (msg, rinfo) => {
      const peer: Peer = {
        transport: 'udp',
        address: rinfo.address,
        port: rinfo.port,
        send: (bytes) => udp.send(bytes, rinfo.port, rinfo.address),
      };
      this.deliver(msg, peer);
    });
    this.udp = udp;
    // TCP on the port UDP got (port 0 picks one for both).
    const tcp = net.createServer((socket) => this.onConnection(socket));
    tcp.maxConnections = MAX_TCP_CONNECTIONS;
    await new Promise<void>((resolve, reject) => {
      tcp.once('error', reject);
      tcp.listen(udp.address().port, host, () => {
        tcp.off('error', reject);
        resolve();
      });
    });
    this.tcp = tcp;
    if (tlsSettings)
      this.tls = await SipTlsListener.listen(
        host,
        tlsSettings,
        MAX_TCP_CONNECTIONS,
        (socket) => this.onConnection(socket, 'tls'),
        this.log,
      );
  }

  private deliver(bytes: Buffer, peer: Peer): void {
    let m: SipMessage;
    try {
      m = parseSipMessage(bytes, this.maxBodyBytes);
    } catch (err) {
      if (!(err instanceof SipParseError)) throw err;
      this.refuse(err, peer);
      return;
    }
    try {
      this.handler.message(m, peer);
    } catch (err) {
      this.log.error({ err }, 'SIP message handling failed');
    }
  }

  private refuse(err: SipParseError, peer: Peer): void {
    if (err.partial && err.partial.method !== 'ACK')
      peer.send(
        writeResponse(err.partial, err.status, {
          reason: `${err.status === 413 ? 'Request Entity Too Large' : 'Bad Request'} (${err.message})`,
        }),
      );
    this.handler.refused(err, peer);
  }

  private onConnection(socket: net.Socket, transport: 'tcp' | 'tls' = 'tcp'): void {
    this.connections.add(socket);
    const framer = new SipStreamFramer(this.maxBodyBytes);
    const peer: Peer = {
      transport,
      address: socket.remoteAddress ?? '',
      port: socket.remotePort ?? 0,
      send: (bytes) => {
        if (!socket.destroyed) socket.write(bytes);
      },
    };
    socket.setTimeout(TCP_IDLE_MS, () => socket.destroy());
    socket.on('data', (chunk: Buffer) => {
      let messages: Buffer[];
      try {
        messages = framer.push(chunk);
      } catch (err) {
        if (!(err instanceof SipParseError)) throw err;
        this.refuse(err, peer);
        socket.end();
        return;
      }
      for (const m of messages) this.deliver(m, peer);
    });
    socket.on('error', () => undefined);
    socket.on('close', () => this.connections.delete(socket));
  }

  async close(): Promise<void> {
    for (const s of this.connections) s.destroy();
    await Promise.all([
      new Promise<void>((resolve) => (this.udp ? this.udp.close(() => resolve()) : resolve())),
      new Promise<void>((resolve) => (this.tcp ? this.tcp.close(() => resolve()) : resolve())),
      this.tls?.close(),
    ]);
    this.tls = null;
    this.udp = null;
    this.tcp = null;
  }
}

/** The sources allowed to send SIP (SCRIBED_SIPREC_ALLOW_CIDRS). */
export class SourceAllowList {
  private readonly list = new net.BlockList();

  constructor(cidrs: readonly string[]) {
    for (const cidr of cidrs) {
      const [ip, bits] = cidr.split('/');
      const family = net.isIP(ip!) === 6 ? 'ipv6' : 'ipv4';
      this.list.addSubnet(ip!, bits === undefined ? (family === 'ipv6' ? 128 : 32) : Number(bits), family);
    }
  }

  allows(address: string): boolean {
    const v4 = address.startsWith('::ffff:') ? address.slice(7) : address;
    return this.list.check(v4, net.isIP(v4) === 6 ? 'ipv6' : 'ipv4');
  }
}
