// Recording sessions over time at the SIPREC recording server (docs/siprec.md), on a node whose
// account may stream two legs at once: an SBC that vanishes without a BYE (SIPp plays G.722
// speech on both streams, then stops) is ended by the inactivity timeout with its legs complete
// and charged exactly; a re-INVITE adding a stream past the account's limit is refused and the
// call keeps its streams; a hold longer than 10 s (a=inactive, no RTP, the RTP timestamps
// jumping by the held time) outlives the inactivity timeout and the leg's audio is filled with
// silence for it, so the words after the hold stand at their time on the call.
import { spawn } from 'node:child_process';
import dgram from 'node:dgram';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir, type TestService } from '../helpers/service.js';
import { siprecAccountId, startSiprecNode, type SiprecNode } from '../helpers/siprec-node.js';
import { loadClips, type Clip } from '../helpers/audio.js';
import { writeRtpPcap } from '../helpers/pcap.js';
import { ffmpegG722 } from '../helpers/g722.js';
import { SipUa } from '../helpers/sip-ua.js';
import { encodeRtpPacket } from '../../src/rtp/packet.js';
import { wordErrorRate } from '../../src/core/wer.js';
import { siprecOf } from '../../src/server/siprec/plugin.js';

const clips = loadClips();
const clip = (id: string): Clip => clips.find((c) => c.id === id)!;
const API = '/sound_clone/api/v1';
const FIXTURES = path.resolve(import.meta.dirname, '../fixtures/siprec');
const ACCOUNT_ID = siprecAccountId('t');
const INACTIVITY_MS = 3000;
// Ports of our own, away from test/server/siprec.test.ts's (30000-49999), varied per run.
const BASE = 50_000 + 200 * Math.floor(Math.random() * 50);

let svc: TestService;
let accessKey: string;
let native: SiprecNode['native'];
let balance: SiprecNode['balance'];
let sipPort: number;

beforeAll(async () => {
  ({ svc, accessKey, native, balance } = await startSiprecNode(
    {
      maxDecoders: 4,
      maxStreamsPerAccount: 2,
      siprec: {
        host: '127.0.0.1',
        port: 0,
        mediaAddress: '127.0.0.1',
        rtpPortMin: BASE,
        rtpPortMax: BASE + 99,
        accountId: ACCOUNT_ID,
        agentPattern: '@cc\\.example\\.com$',
        allowCidrs: [],
        maxBodyBytes: 16 * 1024,
        inactivityTimeoutMs: INACTIVITY_MS,
        holdTimeoutMs: 60_000,
      },
    },
    'siprec-sessions',
  ));
  sipPort = siprecOf(svc.service)!.port!;
}, 60_000);
afterAll(async () => {
  await svc?.stop();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const wer = (ref: string, hyp: string) => Number(wordErrorRate(ref, hyp).wer.toFixed(3));

async function completedCall(externalId: string): Promise<any> {
  let call: any;
  for (let i = 0; i < 400; i++) {
    const list = await native(`${API}/stt/calls?externalId=${encodeURIComponent(externalId)}`);
    call = list.data.items[0];
    if (call) call = (await native(`${API}/stt/calls/${call.callId}`)).data;
    if (call?.status === 'COMPLETED') return call;
    await sleep(100);
  }
  throw new Error(`call ${externalId} never COMPLETED: ${JSON.stringify(call)}`);
}

async function transcript(callId: string): Promise<any> {
  return (await fetch(`${svc.baseUrl}${API}/stt/calls/${callId}/transcript?format=json`, { headers: { accessKey } })).json();
}
const textOf = (merged: any, speaker: string) =>
  merged.segments
    .filter((s: any) => s.speaker === speaker)
    .map((s: any) => s.text)
    .join(' ');

function sipp(scenario: string, dir: string): Promise<void> {
  const args = [`127.0.0.1:${sipPort}`, '-sf', path.join(FIXTURES, scenario), '-m', '1', '-i', '127.0.0.1'];
  args.push('-p', String(BASE + 120), '-mp', String(BASE + 140), '-t', 'u1', '-timeout', '60s', '-timeout_error', '-nostdin');
  return new Promise((resolve, reject) => {
    const child = spawn('sipp', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`sipp ${scenario} exited ${code}: ${err.slice(-2000)}`))));
  });
}

describe('SIPREC sessions over time', () => {
  it('an SBC gone without BYE after G.722 speech on both streams: the session ends after the inactivity timeout, each leg transcribed and charged exactly', async () => {
    const before = await balance();
    const agent = clip('librivox-0870');
    const customer = clip('librivox-0890');
    // The agent sends the first m-line (label 10), the customer the second: flows 0 and 1.
    const dir = tempDir('siprec-g722-');
    writeRtpPcap(path.join(dir, 'speech.pcap'), [
      { mulaw: ffmpegG722(agent.wavFile), ssrc: 0x3333, payloadType: 9 },
      { mulaw: ffmpegG722(customer.wavFile), ssrc: 0x4444, payloadType: 9 },
    ]);
    await sipp('g722-vanishing-call.xml', dir);
    const vanished = Date.now();
    const call = await completedCall('ZzcyMi12YW5pc2hpbmctc2Vzc2lvbg==');
    // Not before the timeout (the last RTP came about 0.4 s before SIPp's end), nor long after.
    expect(Date.now() - vanished).toBeGreaterThan(INACTIVITY_MS - 1000);
    const merged = await transcript(call.callId);
    const figures = `agent ${JSON.stringify(textOf(merged, 'agent'))}, customer ${JSON.stringify(textOf(merged, 'customer'))}`;
    expect(wer(agent.reference, textOf(merged, 'agent')), figures).toBeLessThan(0.65);
    expect(wer(customer.reference, textOf(merged, 'customer')), figures).toBeLessThan(0.65);
    expect(wer(customer.reference, textOf(merged, 'agent')), figures).toBeGreaterThan(0.8);
    // Each leg holds its speech and nothing for the quiet time before the timeout.
    const durations = Object.fromEntries(merged.legs.map((l: any) => [l.speaker, l.durationMs]));
    expect(Math.abs(durations.agent - agent.durationSec * 1000)).toBeLessThan(100);
    expect(Math.abs(durations.customer - customer.durationSec * 1000)).toBeLessThan(100);
    let charged = 0n;
    for (const leg of merged.legs) charged += BigInt(Math.ceil(leg.durationMs / 1000));
    expect(before - (await balance())).toBe(charged);
    const metrics = await (await fetch(`${svc.baseUrl}/metrics`)).text();
    expect(metrics).toMatch(/scribed_siprec_sessions_active 0/);
    expect(metrics).toMatch(/scribed_siprec_rtp_ports_in_use 0/);
    expect(metrics).toMatch(/scribed_siprec_sessions_ended_total\{reason="inactivity"\} 1/);
  }, 90_000);

  it('a re-INVITE past the account stream limit gets 503 and changes nothing; a 12 s hold outlives the inactivity timeout and is filled with silence', async () => {
    const before = await balance();
    const ua = await SipUa.open(sipPort);
    const d = ua.dialog('hold-and-limit');
    const offer = (version: number, lines: Array<[string, string]>) =>
      [
        'v=0',
        `o=x 1 ${version} IN IP4 127.0.0.1`,
        's=-',
        'c=IN IP4 127.0.0.1',
        't=0 0',
        ...lines.flatMap(([label, direction]) => [`m=audio 49170 RTP/AVP 0`, `a=label:${label}`, `a=${direction}`]),
      ].join('\r\n') + '\r\n';
    const meta = (labels: string[]) =>
      '<?xml version="1.0"?><recording xmlns="urn:ietf:params:xml:ns:recording:1"><session session_id="aG9sZC1hbmQtbGltaXQ="/>' +
      labels
        .map(
          (l) =>
            `<participant participant_id="p${l}"><nameID aor="${l === '1' ? 'sip:agent-1@cc.example.com' : `sip:caller-${l}@pstn.example`}"/></participant>` +
            `<stream stream_id="s${l}" session_id="aG9sZC1hbmQtbGltaXQ="><label>${l}</label></stream>` +
            `<participantstreamassoc participant_id="p${l}"><send>s${l}</send></participantstreamassoc>`,
        )
        .join('') +
      '</recording>';
    const multipart = (sdp: string, xml: string) =>
      `--b1\r\nContent-Type: application/sdp\r\n\r\n${sdp}\r\n--b1\r\nContent-Type: application/rs-metadata+xml\r\nContent-Disposition: recording-session\r\n\r\n${xml}\r\n--b1--\r\n`;
    const reoffer = (version: number, lines: Array<[string, string]>) =>
      d.request('INVITE', 'multipart/mixed;boundary=b1', multipart(offer(version, lines), meta(lines.map(([l]) => l))));

    const ok = await reoffer(1, [
      ['1', 'sendonly'],
      ['2', 'sendonly'],
    ]);
    expect(ok.status).toBe(200);
    d.ack(ok);
    const port = Number(/m=audio (\d+)/.exec(ok.text)![1]);

    // A third stream: the account streams its two already.
    const refused = await reoffer(2, [
      ['1', 'sendonly'],
      ['2', 'sendonly'],
      ['3', 'sendonly'],
    ]);
    expect(refused.status).toBe(503);
    expect(refused.text).toMatch(/\r\nRetry-After: 5\r\n/);

    // Speech, a hold of 12 s (RTP timestamps run on through it, as an SBC's clock does), speech.
    const rtp = dgram.createSocket('udp4');
    let seq = 0;
    let ts = 0;
    const send = async (bytes: Buffer) => {
      for (let at = 0; at < bytes.length; at += 160) {
        const payload = bytes.subarray(at, at + 160);
        rtp.send(encodeRtpPacket({ payloadType: 0, sequenceNumber: seq++, timestamp: ts, ssrc: 9, payload }), port, '127.0.0.1');
        ts += payload.length;
        if ((seq & 7) === 0) await sleep(20);
      }
    };
    const first = clip('librivox-0880');
    const second = clip('librivox-0890');
    await send(first.mulaw8k);
    const heldFrom = Date.now();
    const hold = await reoffer(3, [
      ['1', 'inactive'],
      ['2', 'inactive'],
    ]);
    expect(hold.status).toBe(200);
    d.ack(hold);
    await sleep(12_000);
    const resume = await reoffer(4, [
      ['1', 'sendonly'],
      ['2', 'sendonly'],
    ]);
    expect(resume.status).toBe(200);
    expect(resume.text).toMatch(new RegExp(`m=audio ${port} RTP/AVP 0`));
    d.ack(resume);
    const heldMs = Date.now() - heldFrom;
    ts += heldMs * 8;
    const secondAtMs = ts / 8;
    await send(second.mulaw8k);
    await sleep(600);
    rtp.close();
    expect((await d.request('BYE')).status).toBe(200);
    ua.close();

    const call = await completedCall('aG9sZC1hbmQtbGltaXQ=');
    expect(call.legs.map((l: any) => l.speaker)).toEqual(['agent', 'customer']);
    const merged = await transcript(call.callId);
    const agentLeg = merged.legs.find((l: any) => l.speaker === 'agent');
    // The leg's time is the call's: speech, the held time as silence, speech.
    expect(Math.abs(agentLeg.durationMs - ts / 8), JSON.stringify(merged.legs)).toBeLessThan(50);
    const agentSegments = merged.segments.filter((s: any) => s.speaker === 'agent');
    const after = agentSegments.filter((s: any) => s.startMs >= secondAtMs - 500);
    const figures = JSON.stringify(agentSegments.map((s: any) => [s.startMs, s.text]));
    expect(wer(second.reference, after.map((s: any) => s.text).join(' ')), figures).toBeLessThan(0.65);
    expect(
      wer(
        first.reference,
        agentSegments
          .filter((s: any) => s.endMs < 4000)
          .map((s: any) => s.text)
          .join(' '),
      ),
      figures,
    ).toBeLessThan(0.65);
    let charged = 0n;
    for (const leg of merged.legs) charged += BigInt(Math.ceil(leg.durationMs / 1000));
    expect(before - (await balance())).toBe(charged);
  }, 90_000);
});
