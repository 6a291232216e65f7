// SIPREC over SIP over TLS with SRTP (SDES) against independent implementations (docs/siprec.md,
// "SIP over TLS and SRTP"): OpenSSL's s_client is the TLS peer (it checks our certificate, made
// here by openssl), the INVITE offers two SRTP streams with a=crypto keys (one of each suite),
// and ffmpeg's SRTP muxer sends real speech on each. Each leg's transcript matches its speaker's
// clip; a tampered packet is dropped as failing authentication and a resent one as a replay,
// both counted. The same offer over plain UDP is refused with 488, and a SIGHUP loads a renewed
// certificate for new connections.
import { spawn, execFileSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import dgram from 'node:dgram';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir, type TestService } from '../helpers/service.js';
import { siprecAccountId, startSiprecNode, type SiprecNode } from '../helpers/siprec-node.js';
import { loadClips, type Clip } from '../helpers/audio.js';
import { wordErrorRate } from '../../src/core/wer.js';
import { siprecOf } from '../../src/server/siprec/plugin.js';

const clips = loadClips();
const clip = (id: string): Clip => clips.find((c) => c.id === id)!;
const API = '/sound_clone/api/v1';
const ACCOUNT_ID = siprecAccountId('t');
const BASE = 30_000 + 200 * Math.floor(Math.random() * 100) + 100;
const certDir = tempDir('siprec-tls-');
const CERT = path.join(certDir, 'cert.pem');
const KEY = path.join(certDir, 'key.pem');

/** A self-signed certificate for 127.0.0.1 (written over the files, as a renewal would). */
function makeCertificate(cn: string): void {
  execFileSync(
    'openssl',
    [
      ...['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1'],
      ...['-keyout', KEY, '-out', CERT, '-subj', `/CN=${cn}`, '-addext', 'subjectAltName=IP:127.0.0.1'],
    ],
    { stdio: 'ignore' },
  );
}

let svc: TestService;
let accessKey: string;
let native: SiprecNode['native'];
let tlsPort: number;
let udpPort: number;

beforeAll(async () => {
  makeCertificate('scribed-test-1');
  ({ svc, accessKey, native } = await startSiprecNode(
    {
      maxDecoders: 4,
      siprec: {
        host: '127.0.0.1',
        port: 0,
        mediaAddress: '127.0.0.1',
        rtpPortMin: BASE,
        rtpPortMax: BASE + 49,
        accountId: ACCOUNT_ID,
        agentPattern: '@cc\\.example\\.com$',
        allowCidrs: [],
        maxBodyBytes: 16 * 1024,
        tls: { port: 0, certFile: CERT, keyFile: KEY },
      },
    },
    'siprec-tls',
  ));
  const recorder = siprecOf(svc.service)!;
  tlsPort = recorder.transport.portOf('tls')!;
  udpPort = recorder.port!;
}, 60_000);
afterAll(async () => {
  await svc?.stop();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** SIP over TLS through `openssl s_client`, which verifies our certificate against `caFile`. */
class TlsPeer {
  private buffer = '';
  private readonly messages: string[] = [];
  private waiters: Array<() => void> = [];
  private exited = '';
  private constructor(private readonly child: ChildProcessWithoutNullStreams) {
    child.stdout.on('data', (d: Buffer) => {
      this.buffer += d.toString('latin1');
      for (;;) {
        const end = this.buffer.indexOf('\r\n\r\n');
        if (end < 0) break;
        const length = Number(/\r\nContent-Length: *(\d+)/i.exec(this.buffer.slice(0, end))?.[1] ?? 0);
        if (this.buffer.length < end + 4 + length) break;
        this.messages.push(this.buffer.slice(0, end + 4 + length));
        this.buffer = this.buffer.slice(end + 4 + length);
      }
      for (const w of this.waiters.splice(0)) w();
    });
    child.stderr.on('data', (d: Buffer) => (this.exited += d.toString()));
  }

  static open(caFile: string): TlsPeer {
    const args = ['s_client', '-connect', `127.0.0.1:${tlsPort}`, '-CAfile', caFile, '-verify_return_error', '-verify_ip', '127.0.0.1'];
    return new TlsPeer(spawn('openssl', [...args, '-quiet'], { stdio: ['pipe', 'pipe', 'pipe'] }));
  }

  send(lines: string[], body = ''): void {
    this.child.stdin.write([...lines, `Content-Length: ${Buffer.byteLength(body)}`, '', body].join('\r\n'));
  }

  async next(pred: (m: string) => boolean, ms = 10_000): Promise<string> {
    const deadline = Date.now() + ms;
    for (;;) {
      const i = this.messages.findIndex(pred);
      if (i >= 0) return this.messages.splice(i, 1)[0]!;
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no matching SIP message over TLS (openssl: ${this.exited.slice(-500)})`);
      await new Promise<void>((r) => {
        const t = setTimeout(r, Math.min(left, 200));
        this.waiters.push(() => {
          clearTimeout(t);
          r();
        });
      });
    }
  }

  close(): void {
    this.child.kill();
  }
}

const head = (method: string, callId: string, cseq: number, toTag = '') => [
  `${method} sips:srs@127.0.0.1:${tlsPort} SIP/2.0`,
  `Via: SIP/2.0/TLS 127.0.0.1:5061;branch=z9hG4bK-${callId}-${cseq}${method === 'ACK' ? 'a' : ''}`,
  'Max-Forwards: 70',
  `From: <sips:src@sbc.example.com>;tag=f-${callId}`,
  `To: <sips:srs@127.0.0.1>${toTag ? `;tag=${toTag}` : ''}`,
  `Call-ID: ${callId}`,
  `CSeq: ${cseq} ${method}`,
  'Contact: <sips:src@127.0.0.1:5061>',
];

const SESSION = 'c3J0cC1vdmVyLXRscw==';
const METADATA =
  `<?xml version="1.0"?><recording xmlns="urn:ietf:params:xml:ns:recording:1"><session session_id="${SESSION}"/>` +
  [
    ['1', 'sip:agent-3001@cc.example.com', 'Agent'],
    ['2', 'sip:+15550002222@pstn.example.net', 'Caller'],
  ]
    .map(
      ([label, aor, name]) =>
        `<participant participant_id="p${label}"><nameID aor="${aor}"><name>${name}</name></nameID></participant>` +
        `<stream stream_id="s${label}" session_id="${SESSION}"><label>${label}</label></stream>` +
        `<participantstreamassoc participant_id="p${label}"><send>s${label}</send></participantstreamassoc>`,
    )
    .join('') +
  '</recording>';
const offer = (keys: Array<[string, string, Buffer]>) =>
  [
    'v=0',
    'o=sbc 1 1 IN IP4 127.0.0.1',
    's=-',
    'c=IN IP4 127.0.0.1',
    't=0 0',
    ...keys.flatMap(([label, suite, key]) => [
      'm=audio 49170 RTP/SAVP 0',
      `a=crypto:1 ${suite} inline:${key.toString('base64')}|2^31`,
      `a=label:${label}`,
      'a=sendonly',
    ]),
  ].join('\r\n') + '\r\n';
const multipart = (sdp: string) =>
  `--b1\r\nContent-Type: application/sdp\r\n\r\n${sdp}\r\n--b1\r\nContent-Type: application/rs-metadata+xml\r\nContent-Disposition: recording-session\r\n\r\n${METADATA}\r\n--b1--\r\n`;

/** ffmpeg sends `clip` as SRTP through a relay of ours to `port`; the relay sends a tampered
 * copy of packet 30 first and packet 40 twice. */
async function sendSrtp(clipFile: string, suite: string, key: Buffer, port: number): Promise<number> {
  const relay = dgram.createSocket('udp4');
  await new Promise<void>((r) => relay.bind(0, '127.0.0.1', () => r()));
  let n = 0;
  relay.on('message', (m) => {
    n++;
    if (n === 30) {
      const bad = Buffer.from(m);
      bad[40]! ^= 0x10;
      relay.send(bad, port, '127.0.0.1');
    }
    relay.send(m, port, '127.0.0.1');
    if (n === 40) relay.send(m, port, '127.0.0.1');
  });
  const args = ['-hide_banner', '-loglevel', 'error', '-readrate', '4', '-f', 'mulaw', '-ar', '8000', '-ac', '1', '-i', clipFile];
  args.push('-c:a', 'copy', '-f', 'rtp', '-srtp_out_suite', suite, '-srtp_out_params', key.toString('base64'));
  args.push(`srtp://127.0.0.1:${relay.address().port}`);
  await new Promise<void>((resolve, reject) => {
    const child = spawn('ffmpeg', args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`ffmpeg exited ${code}: ${err}`))));
  });
  await sleep(300);
  relay.close();
  return n;
}

describe('SIPREC over TLS with SRTP', () => {
  it('s_client INVITE over TLS with SDES keys, ffmpeg SRTP speech on both streams: each leg transcribes its speaker; tampered and replayed packets dropped and counted', async () => {
    const agent = clip('librivox-0870');
    const customer = clip('librivox-0920');
    const keyAgent = randomBytes(30);
    const keyCustomer = randomBytes(30);
    const peer = TlsPeer.open(CERT);
    const callId = 'tls-srtp-1';
    peer.send(
      [...head('INVITE', callId, 1), 'Require: siprec', 'Content-Type: multipart/mixed;boundary=b1'],
      multipart(
        offer([
          ['1', 'AES_CM_128_HMAC_SHA1_80', keyAgent],
          ['2', 'AES_CM_128_HMAC_SHA1_32', keyCustomer],
        ]),
      ),
    );
    const ok = await peer.next((m) => /^SIP\/2\.0 [2-6]\d\d/.test(m) && m.includes(`Call-ID: ${callId}`), 30_000);
    expect(ok.split('\r\n')[0]).toBe('SIP/2.0 200 OK');
    expect(ok).toMatch(new RegExp(`\r\nContact: <sips:scribed@127\\.0\\.0\\.1:${tlsPort}>`));
    expect(ok).toMatch(/\r\nVia: SIP\/2\.0\/TLS 127\.0\.0\.1:5061;/);
    const media = [...ok.matchAll(/m=audio (\d+) (\S+) 0\r\n([\s\S]*?)(?=m=|$)/g)];
    expect(media.map((m) => m[2])).toEqual(['RTP/SAVP', 'RTP/SAVP']);
    const answered = media.map((m) => /a=crypto:1 (\S+) inline:(\S+)/.exec(m[3]!));
    expect(answered.map((a) => a?.[1])).toEqual(['AES_CM_128_HMAC_SHA1_80', 'AES_CM_128_HMAC_SHA1_32']);
    // Our own keys, one per stream: never an echo of the offer's.
    const ours = answered.map((a) => Buffer.from(a![2]!, 'base64'));
    expect(ours.every((k) => k.length === 30 && !k.equals(keyAgent) && !k.equals(keyCustomer))).toBe(true);
    expect(ours[0]!.equals(ours[1]!)).toBe(false);
    const toTag = /\r\nTo: [^\r]*;tag=([^;\r]+)/.exec(ok)![1]!;
    peer.send(head('ACK', callId, 1, toTag));

    const [sentAgent] = await Promise.all([
      sendSrtp(agent.ulawFile, 'AES_CM_128_HMAC_SHA1_80', keyAgent, Number(media[0]![1])),
      sendSrtp(customer.ulawFile, 'AES_CM_128_HMAC_SHA1_32', keyCustomer, Number(media[1]![1])),
    ]);
    expect(sentAgent).toBeGreaterThan(agent.mulaw8k.length / 400); // ffmpeg sends 40 ms a packet
    await sleep(500);
    peer.send(head('BYE', callId, 2, toTag));
    expect(await peer.next((m) => m.startsWith('SIP/2.0 200') && m.includes('CSeq: 2 BYE'))).toBeTruthy();
    peer.close();

    let call: any;
    for (let i = 0; i < 300 && call?.status !== 'COMPLETED'; i++) {
      const item = (await native(`${API}/stt/calls?externalId=${encodeURIComponent(SESSION)}`)).data.items[0];
      call = item ? (await native(`${API}/stt/calls/${item.callId}`)).data : undefined;
      if (call?.status !== 'COMPLETED') await sleep(100);
    }
    expect(call?.status).toBe('COMPLETED');
    const merged: any = await (
      await fetch(`${svc.baseUrl}${API}/stt/calls/${call.callId}/transcript?format=json`, { headers: { accessKey } })
    ).json();
    const text = (speaker: string) =>
      merged.segments
        .filter((s: any) => s.speaker === speaker)
        .map((s: any) => s.text)
        .join(' ');
    const wer = (ref: string, hyp: string) => wordErrorRate(ref, hyp).wer;
    const figures = `agent ${JSON.stringify(text('agent'))}, customer ${JSON.stringify(text('customer'))}`;
    expect(wer(agent.reference, text('agent')), figures).toBeLessThan(0.65);
    expect(wer(customer.reference, text('customer')), figures).toBeLessThan(0.65);
    expect(wer(customer.reference, text('agent')), figures).toBeGreaterThan(0.8);

    const metrics = await (await fetch(`${svc.baseUrl}/metrics`)).text();
    expect(metrics).toMatch(/scribed_siprec_rtp_packets_dropped_total\{reason="srtp_auth"\} 2\n/);
    expect(metrics).toMatch(/scribed_siprec_rtp_packets_dropped_total\{reason="srtp_replay"\} 2\n/);
    expect(metrics).toMatch(/scribed_siprec_requests_total\{method="INVITE",transport="tls"\} 1\n/);
  }, 120_000);

  it('refuses SDES keys over plain UDP with 488, and loads a renewed certificate on SIGHUP', async () => {
    const sock = dgram.createSocket('udp4');
    await new Promise<void>((r) => sock.bind(0, '127.0.0.1', () => r()));
    const answer = new Promise<string>((resolve) =>
      sock.on('message', (m) => {
        if (!m.toString().startsWith('SIP/2.0 1')) resolve(m.toString());
      }),
    );
    const body = offer([['1', 'AES_CM_128_HMAC_SHA1_80', randomBytes(30)]]);
    const invite = head('INVITE', 'plain-sdes', 1).map((l) =>
      l.replace('SIP/2.0/TLS 127.0.0.1:5061', `SIP/2.0/UDP 127.0.0.1:${sock.address().port}`).replace(/sips:/g, 'sip:'),
    );
    sock.send([...invite, 'Content-Type: application/sdp', `Content-Length: ${body.length}`, '', body].join('\r\n'), udpPort, '127.0.0.1');
    expect(await answer).toMatch(/^SIP\/2\.0 488 Not Acceptable Here \(SRTP keys \(a=crypto\) are taken over SIP over TLS only\)/);
    sock.close();
    expect((await native(`${API}/stt/calls?externalId=plain-sdes`)).data.items).toHaveLength(0);

    // A renewed certificate: a peer trusting only the new one is refused until the SIGHUP.
    const old = fs.readFileSync(CERT);
    makeCertificate('scribed-test-2');
    const fresh = path.join(certDir, 'fresh.pem');
    fs.copyFileSync(CERT, fresh);
    expect(fs.readFileSync(fresh).equals(old)).toBe(false);
    const options = (n: number) => [...head('OPTIONS', `tls-options-${n}`, 1)];
    const before = TlsPeer.open(fresh);
    before.send(options(1));
    await expect(before.next((m) => m.startsWith('SIP/2.0 200'), 3000)).rejects.toThrow(/no matching SIP message/);
    before.close();
    svc.service.reload();
    const after = TlsPeer.open(fresh);
    after.send(options(2));
    expect(await after.next((m) => m.startsWith('SIP/2.0 200'))).toMatch(/Supported: siprec/);
    after.close();
  }, 30_000);
});
