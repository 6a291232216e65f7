// SIP over TLS for the recording server (RFC 3261 section 26.2; docs/siprec.md): a node:tls
// listener on its own port (5061 is the usual one) whose connections are framed like SIP over
// TCP (transport.ts). The certificate chain and key are PEM files named by the settings; a
// SIGHUP reads them again (a renewed certificate without a restart: connections open keep
// theirs, new ones get the new). Files that cannot be read or do not make a key pair change
// nothing: the previous certificate stays, and the log says why.
import fs from 'node:fs';
import tls from 'node:tls';
import type { FastifyBaseLogger } from 'fastify';
import type { SiprecTlsSettings } from '../../core/sip/settings.js';

const HANDSHAKE_TIMEOUT_MS = 10_000;

function secureContextOptions(s: SiprecTlsSettings): tls.SecureContextOptions {
  const options = { cert: fs.readFileSync(s.certFile), key: fs.readFileSync(s.keyFile), minVersion: 'TLSv1.2' as const };
  // Checks the pair now (a mismatched key throws here), not at the first handshake.
  tls.createSecureContext(options);
  return options;
}

export class SipTlsListener {
  private constructor(
    private readonly server: tls.Server,
    private readonly settings: SiprecTlsSettings,
    private readonly log: FastifyBaseLogger,
  ) {}

  /** Listens on `settings.port` (0: any); each connection, once its handshake is done, to `onSocket`. */
  static async listen(
    host: string,
    settings: SiprecTlsSettings,
    maxConnections: number,
    onSocket: (socket: tls.TLSSocket) => void,
    log: FastifyBaseLogger,
  ): Promise<SipTlsListener> {
    const server = tls.createServer({ ...secureContextOptions(settings), handshakeTimeout: HANDSHAKE_TIMEOUT_MS }, onSocket);
    server.maxConnections = maxConnections;
    server.on('tlsClientError', (err, socket) =>
      log.warn({ source: `${socket.remoteAddress}:${socket.remotePort}`, reason: err.message }, 'SIP over TLS: handshake failed'),
    );
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(settings.port, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
    return new SipTlsListener(server, settings, log);
  }

  get port(): number {
    const a = this.server.address();
    return a && typeof a === 'object' ? a.port : 0;
  }

  /** Reads the certificate and key files again; false (the old pair kept) when they do not load. */
  reload(): boolean {
    try {
      this.server.setSecureContext(secureContextOptions(this.settings));
      this.log.info({ certFile: this.settings.certFile }, 'SIGHUP: SIP over TLS certificate read again');
      return true;
    } catch (err) {
      this.log.error(
        { certFile: this.settings.certFile, keyFile: this.settings.keyFile, error: (err as Error).message },
        'SIGHUP: SIP over TLS certificate refused; the previous one stays in force',
      );
      return false;
    }
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

/** Our Contact for an answer on `transport`: a `sips:` URI when the request was addressed to
 * one (RFC 5630: TLS on every hop), else `sip:` with the transport parameter. */
export function contactUri(host: string, port: number | null, transport: string, requestUri: string): string {
  if (transport === 'tls' && /^sips:/i.test(requestUri)) return `<sips:scribed@${host}:${port}>`;
  return `<sip:scribed@${host}:${port};transport=${transport}>`;
}
