// The SIPREC settings (docs/siprec.md, "Settings"): `scribed serve`'s --siprec-* flags, each over
// its SCRIBED_SIPREC_* variable, which still works alone.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { loadConfig } from '../../src/config.js';

const ACCOUNT = `acc_${'a'.repeat(20)}`;

afterEach(() => vi.unstubAllEnvs());

describe('SIPREC settings', () => {
  it('come from the flags, over the environment', () => {
    vi.stubEnv('SCRIBED_SIPREC_PORT', '5070');
    vi.stubEnv('SCRIBED_SIPREC_ACCOUNT', `acc_${'b'.repeat(20)}`);
    vi.stubEnv('SCRIBED_SIPREC_RTP_PORTS', '40000-40099');
    const { siprec } = loadConfig({
      siprecFlags: {
        port: 5060,
        account: ACCOUNT,
        host: '0.0.0.0',
        mediaAddress: '10.0.0.20',
        agentPattern: '^sip:2',
        allowCidrs: ['10.0.0.5/32', '10.0.1.0/24'],
        maxBodyBytes: 32_768,
        inactivityTimeoutS: 90,
        holdTimeoutS: 600,
      },
    });
    expect(siprec).toEqual({
      host: '0.0.0.0',
      port: 5060,
      mediaAddress: '10.0.0.20',
      rtpPortMin: 40000,
      rtpPortMax: 40099,
      accountId: ACCOUNT,
      agentPattern: '^sip:2',
      allowCidrs: ['10.0.0.5/32', '10.0.1.0/24'],
      maxBodyBytes: 32_768,
      inactivityTimeoutMs: 90_000,
      holdTimeoutMs: 600_000,
    });
  });

  it('come from the environment alone, and are off without a port', () => {
    expect(loadConfig({}).siprec).toBeUndefined();
    vi.stubEnv('SCRIBED_SIPREC_PORT', '5060');
    vi.stubEnv('SCRIBED_SIPREC_ACCOUNT', ACCOUNT);
    vi.stubEnv('SCRIBED_SIPREC_INACTIVITY_TIMEOUT_S', '30');
    const { siprec } = loadConfig({ host: '127.0.0.1' });
    expect(siprec).toMatchObject({ port: 5060, accountId: ACCOUNT, mediaAddress: '127.0.0.1', inactivityTimeoutMs: 30_000 });
    expect(siprec?.holdTimeoutMs).toBeUndefined();
  });

  it('SIP over TLS and SDES come from the environment; a TLS port needs both PEM files', () => {
    vi.stubEnv('SCRIBED_SIPREC_PORT', '5060');
    vi.stubEnv('SCRIBED_SIPREC_ACCOUNT', ACCOUNT);
    vi.stubEnv('SCRIBED_SIPREC_TLS_PORT', '5061');
    expect(() => loadConfig({ host: '127.0.0.1' })).toThrow(/needs --siprec-tls-cert and --siprec-tls-key/);
    vi.stubEnv('SCRIBED_SIPREC_TLS_CERT', '/etc/scribed/sip.crt');
    vi.stubEnv('SCRIBED_SIPREC_TLS_KEY', '/etc/scribed/sip.key');
    vi.stubEnv('SCRIBED_SIPREC_ALLOW_SDES_WITHOUT_TLS', 'true');
    expect(loadConfig({ host: '127.0.0.1' }).siprec).toMatchObject({
      tls: { port: 5061, certFile: '/etc/scribed/sip.crt', keyFile: '/etc/scribed/sip.key' },
      allowSdesWithoutTls: true,
    });
    vi.stubEnv('SCRIBED_SIPREC_ALLOW_SDES_WITHOUT_TLS', 'sometimes');
    expect(() => loadConfig({ host: '127.0.0.1' })).toThrow(/must be true or false/);
  });

  it('SIP over TLS and SDES come from the flags too, over the environment', () => {
    vi.stubEnv('SCRIBED_SIPREC_TLS_CERT', '/etc/scribed/old.crt');
    vi.stubEnv('SCRIBED_SIPREC_ALLOW_SDES_WITHOUT_TLS', 'true');
    const flags = { port: 5060, account: ACCOUNT, tlsPort: 5061, tlsCert: '/etc/scribed/sip.crt', tlsKey: '/etc/scribed/sip.key' };
    expect(loadConfig({ host: '127.0.0.1', siprecFlags: { ...flags, allowSdesWithoutTls: false } }).siprec).toMatchObject({
      tls: { port: 5061, certFile: '/etc/scribed/sip.crt', keyFile: '/etc/scribed/sip.key' },
      allowSdesWithoutTls: false,
    });
    expect(() => loadConfig({ host: '127.0.0.1', siprecFlags: { ...flags, tlsKey: undefined } })).toThrow(/--siprec-tls-key/);
  });

  it('refuse a port without an account, and a timeout out of range', () => {
    expect(() => loadConfig({ siprecFlags: { port: 5060 } })).toThrow(/--siprec-account/);
    expect(() => loadConfig({ siprecFlags: { port: 5060, account: ACCOUNT, inactivityTimeoutS: 0 } })).toThrow(/inactivity timeout/);
  });
});
