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

  it('refuse a port without an account, and a timeout out of range', () => {
    expect(() => loadConfig({ siprecFlags: { port: 5060 } })).toThrow(/--siprec-account/);
    expect(() => loadConfig({ siprecFlags: { port: 5060, account: ACCOUNT, inactivityTimeoutS: 0 } })).toThrow(/inactivity timeout/);
  });
});
