// The SIPREC recording server against a real server on the store under test (docs/siprec.md),
// driven by SIPp (Debian's sip-tester) playing the scenarios in test/fixtures/siprec: a
// multipart INVITE in each dialect (RFC 7865 over UDP, the draft namespace with its parts and
// labels swapped over UDP, Cisco CUBE's header form over TCP), real speech on both streams from
// pcap files built here (a different clip per participant, so a stream bound to the wrong
// participant shows in the error rates), a hold by re-INVITE, its resumption by UPDATE, and BYE.
// Bad input is answered with its SIP status while the calls go on, and charges nothing.
import { spawn } from 'node:child_process';
import dgram from 'node:dgram';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir, type TestService } from '../helpers/service.js';
import { siprecAccountId, startSiprecNode, type SiprecNode } from '../helpers/siprec-node.js';
import { loadClips, type Clip } from '../helpers/audio.js';
import { writeRtpPcap } from '../helpers/pcap.js';
import { decodeMulaw, encodeAlaw } from '../../src/core/audio/encodings.js';
import { encodeRtpPacket } from '../../src/rtp/packet.js';
import { wordErrorRate } from '../../src/core/wer.js';
import { siprecOf } from '../../src/server/siprec/plugin.js';
import { SipUa } from '../helpers/sip-ua.js';

const clips = loadClips();
const clip = (id: string): Clip => clips.find((c) => c.id === id)!;
const API = '/sound_clone/api/v1';
const FIXTURES = path.resolve(import.meta.dirname, '../fixtures/siprec');
const ACCOUNT_ID = siprecAccountId('s');
const AGENT_RULE = '@cc\\.example\\.com$|^sip:4\\d{3}@|^sip:7\\d{3}@';
// Ports of our own in a range other tests do not use, varied per run.
const BASE = 30_000 + 200 * Math.floor(Math.random() * 100);

let svc: TestService;
let accessKey: string;
let native: SiprecNode['native'];
let balance: SiprecNode['balance'];
let sipPort: number;

beforeAll(async () => {
  ({ svc, accessKey, native, balance } = await startSiprecNode(
    {
      maxDecoders: 6,
      siprec: {
        host: '127.0.0.1',
        port: 0,
        mediaAddress: '127.0.0.1',
        rtpPortMin: BASE,
        rtpPortMax: BASE + 99,
        accountId: ACCOUNT_ID,
        agentPattern: AGENT_RULE,
        allowCidrs: [],
        maxBodyBytes: 16 * 1024,
      },
    },
    'siprec',
  ));
  sipPort = siprecOf(svc.service)!.port!;
}, 60_000);
afterAll(async () => {
  await svc?.stop();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const wer = (ref: string, hyp: string) => Number(wordErrorRate(ref, hyp).wer.toFixed(3));

/** Runs one SIPp scenario to its end (exit 0) with its pcap in `dir`. */
function sipp(scenario: string, dir: string, transport: 'u1' | 't1', n: number): Promise<void> {
  const args = [
    `127.0.0.1:${sipPort}`,
    '-sf',
    path.join(FIXTURES, scenario),
    '-m',
    '1',
    '-i',
    '127.0.0.1',
    '-p',
    String(BASE + 120 + n),
    '-mp',
    String(BASE + 140 + 10 * n),
    '-t',
    transport,
    '-timeout',
    '60s',
    '-timeout_error',
    '-nostdin',
    '-trace_err',
  ];
  return new Promise((resolve, reject) => {
    const child = spawn('sipp', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('error', reject);
    child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`sipp ${scenario} exited ${code}: ${err.slice(-2000)}`))));
  });
}

/** A pcap of two flows: flow 0 to the answer's first m-line, flow 1 to its second. */
function pcapDir(first: Clip, second: Clip): string {
  const dir = tempDir('siprec-pcap-');
  writeRtpPcap(path.join(dir, 'speech.pcap'), [
    { mulaw: first.mulaw8k, ssrc: 0x1111 },
    { mulaw: second.mulaw8k, ssrc: 0x2222 },
  ]);
  return dir;
}

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

async function speakerTexts(callId: string): Promise<{ merged: any; text: (speaker: string) => string }> {
  const merged: any = await (
    await fetch(`${svc.baseUrl}${API}/stt/calls/${callId}/transcript?format=json`, { headers: { accessKey } })
  ).json();
  const text = (speaker: string) =>
    merged.segments
      .filter((s: any) => s.speaker === speaker)
      .map((s: any) => s.text)
      .join(' ');
  return { merged, text };
}

/** One datagram to the SIP port; resolves with the first final answer (or null on timeout). */
async function udpExchange(message: string): Promise<string | null> {
  const sock = dgram.createSocket('udp4');
  await new Promise<void>((r) => sock.bind(0, '127.0.0.1', () => r()));
  try {
    return await new Promise((resolve) => {
      const timer = setTimeout(() => resolve(null), 5000);
      sock.on('message', (m) => {
        const s = m.toString();
        if (/^SIP\/2\.0 1\d\d/.test(s)) return;
        clearTimeout(timer);
        resolve(s);
      });
      sock.send(message.replace(/PORT/g, String((sock.address() as net.AddressInfo).port)), sipPort, '127.0.0.1');
    });
  } finally {
    sock.close();
  }
}

function rawInvite(callId: string, contentType: string, body: string): string {
  return [
    'INVITE sip:srs@127.0.0.1 SIP/2.0',
    `Via: SIP/2.0/UDP 127.0.0.1:PORT;branch=z9hG4bK-${callId}`,
    `From: <sip:src@127.0.0.1>;tag=${callId}`,
    'To: <sip:srs@127.0.0.1>',
    `Call-ID: ${callId}`,
    'CSeq: 1 INVITE',
    'Contact: <sip:src@127.0.0.1:PORT>',
    `Content-Type: ${contentType}`,
    `Content-Length: ${Buffer.byteLength(body)}`,
    '',
    body,
  ].join('\r\n');
}

const SDP = (codecs: string) =>
  [
    'v=0',
    'o=x 1 1 IN IP4 127.0.0.1',
    's=-',
    'c=IN IP4 127.0.0.1',
    't=0 0',
    `m=audio 49170 RTP/AVP ${codecs}`,
    'a=label:1',
    'a=sendonly',
    '',
  ].join('\r\n');
const METADATA_LABEL_99 = `<?xml version="1.0"?><recording xmlns="urn:ietf:params:xml:ns:recording:1"><session session_id="YmFkLWxhYmVs"/>
<participant participant_id="cA=="><nameID aor="sip:a@x"/></participant><stream stream_id="cw==" session_id="YmFkLWxhYmVs"><label>99</label></stream>
<participantstreamassoc participant_id="cA=="><send>cw==</send></participantstreamassoc></recording>`;
const multipart = (sdp: string, xml: string) =>
  `--b1\r\nContent-Type: application/sdp\r\n\r\n${sdp}\r\n--b1\r\nContent-Type: application/rs-metadata+xml\r\nContent-Disposition: recording-session\r\n\r\n${xml}\r\n--b1--\r\n`;

describe('SIPREC recording server', () => {
  it('three dialects at once, real speech on both streams: each leg transcribes its own participant, bound by label; bad input refused meanwhile, nothing charged for it', async () => {
    const before = await balance();
    const agent = clip('librivox-0870');
    const customer = clip('librivox-0920');
    // RFC 7865: the agent sends the first m-line (label 10). Draft: labels 2,1 and the agent
    // (label 2) on the first m-line. Cisco: the agent on the second m-line (media-index 1).
    const runs = Promise.all([
      sipp('rfc7865-call.xml', pcapDir(agent, customer), 'u1', 0),
      sipp('draft-swapped-call.xml', pcapDir(agent, customer), 'u1', 1),
      sipp('cisco-call.xml', pcapDir(customer, agent), 't1', 2),
    ]);

    // Meanwhile, bad input: each answered with its status, no call made.
    await sleep(1500);
    const noCallId = rawInvite('x', 'application/sdp', SDP('0')).replace(/Call-ID: x\r\n/, '');
    expect(await udpExchange(noCallId)).toMatch(/^SIP\/2\.0 400 Bad Request \(missing Call-ID\)/);
    expect(await udpExchange(rawInvite('big-1', 'application/sdp', SDP('0') + 'a=x:'.padEnd(20_000, 'y') + '\r\n'))).toMatch(
      /^SIP\/2\.0 413 /,
    );
    expect(await udpExchange(rawInvite('g729-1', 'application/sdp', SDP('18')))).toMatch(
      /^SIP\/2\.0 488 Not Acceptable Here \(stream 1 offers no supported codec/,
    );
    expect(await udpExchange(rawInvite('label-1', 'multipart/mixed;boundary=b1', multipart(SDP('0'), METADATA_LABEL_99)))).toMatch(
      /^SIP\/2\.0 488 Not Acceptable Here \(the metadata names stream label 99/,
    );
    expect(
      await udpExchange(
        rawInvite(
          'xml-1',
          'multipart/mixed;boundary=b1',
          multipart(SDP('0'), '<recording xmlns="urn:ietf:params:xml:ns:recording:1"><participant'),
        ),
      ),
    ).toMatch(/^SIP\/2\.0 400 /);
    const options = await udpExchange(
      [
        'OPTIONS sip:srs@127.0.0.1 SIP/2.0',
        'Via: SIP/2.0/UDP 127.0.0.1:PORT;branch=z9hG4bK-o1',
        'From: <sip:p@x>;tag=1',
        'To: <sip:srs@x>',
        'Call-ID: o1',
        'CSeq: 1 OPTIONS',
        'Content-Length: 0',
        '',
        '',
      ].join('\r\n'),
    );
    expect(options).toMatch(/^SIP\/2\.0 200 OK/);
    expect(options).toMatch(/Supported: siprec/);
    const bye = await udpExchange(
      [
        'BYE sip:srs@127.0.0.1 SIP/2.0',
        'Via: SIP/2.0/UDP 127.0.0.1:PORT;branch=z9hG4bK-b1',
        'From: <sip:p@x>;tag=1',
        'To: <sip:srs@x>;tag=nope',
        'Call-ID: nope',
        'CSeq: 2 BYE',
        'Content-Length: 0',
        '',
        '',
      ].join('\r\n'),
    );
    expect(bye).toMatch(/^SIP\/2\.0 481 /);
    for (const id of ['YmFkLWxhYmVs', 'g729-1', 'label-1', 'big-1'])
      expect((await native(`${API}/stt/calls?externalId=${encodeURIComponent(id)}`)).data.items).toHaveLength(0);

    await runs;
    const results = [];
    for (const [externalId, dialect] of [
      ['ZmFrZXNlc3Npb24tcmZjNzg2NQ==', 'rfc7865'],
      ['b3JhY2xlLXNlc3Npb24tMQ==', 'draft'],
      ['0d3f5c6a7b8c9d0e1f2a3b4c5d6e7f80', 'cisco'],
    ] as const) {
      const call = await completedCall(externalId);
      const { merged, text } = await speakerTexts(call.callId);
      const figures = `${dialect}: agent ${JSON.stringify(text('agent'))}, customer ${JSON.stringify(text('customer'))}`;
      expect([...call.legs.map((l: any) => l.speaker)].sort(), figures).toEqual(['agent', 'customer']);
      expect(wer(agent.reference, text('agent')), figures).toBeLessThan(0.65);
      expect(wer(customer.reference, text('customer')), figures).toBeLessThan(0.65);
      expect(wer(customer.reference, text('agent')), figures).toBeGreaterThan(0.8);
      expect(wer(agent.reference, text('customer')), figures).toBeGreaterThan(0.8);
      results.push({ call, merged });
    }
    const [rfc, draft, cisco] = results;
    expect(rfc!.call.title).toMatch(
      /^SIPREC Alice Caller <sip:alice@customer\.example\.net> & Agent 2001 <sip:agent-2001@cc\.example\.com> \(Call-ID \S+, session 3fa1c2d4e5f60718293a4b5c6d7e8f90\)$/,
    );
    expect(rfc!.call.agentId).toBe('sip:agent-2001@cc.example.com');
    expect(draft!.call.agentId).toBe('sip:4002@pbx.example.org');
    expect(cisco!.call.agentId).toBe('sip:7001@10.20.0.15');
    expect(cisco!.call.title).toMatch(/Pat Caller <sip:\+15550001111@203\.0\.113\.7>/);
    // Each leg holds its stream's audio (the hold sent none); charged per leg, nothing else.
    let charged = 0n;
    for (const { merged } of results)
      for (const leg of merged.legs) {
        expect(leg.durationMs).toBeGreaterThan(5500);
        charged += BigInt(Math.ceil(leg.durationMs / 1000));
      }
    expect(before - (await balance())).toBe(charged);

    const metrics = await (await fetch(`${svc.baseUrl}/metrics`)).text();
    expect(metrics).toMatch(/scribed_siprec_sessions_total\{outcome="answered"\} 3/);
    expect(metrics).toMatch(/scribed_siprec_sessions_total\{outcome="not_acceptable"\} 2/);
    expect(metrics).toMatch(/scribed_siprec_sessions_active 0/);
    expect(metrics).toMatch(/scribed_siprec_requests_total\{method="REINVITE",transport="tcp"\} 1/);
    expect(metrics).toMatch(/scribed_siprec_rtp_ports_in_use 0/);
  }, 150_000);

  it('a stream per INVITE joins one call; the 2xx is resent until its ACK; a re-INVITE changes the codec and adds a participant; CANCEL gets 487', async () => {
    const before = await balance();
    const ua = await SipUa.open(sipPort);
    const session = 'c3RyZWFtLXBlci1pbnZpdGU=';
    const meta = (streams: Array<[string, string, string]>) =>
      `<?xml version="1.0"?><recording xmlns="urn:ietf:params:xml:ns:recording:1"><session session_id="${session}"/>` +
      streams
        .map(
          ([label, aor, name]) =>
            `<participant participant_id="p${label}"><nameID aor="${aor}"><name>${name}</name></nameID></participant>` +
            `<stream stream_id="s${label}" session_id="${session}"><label>${label}</label></stream>` +
            `<participantstreamassoc participant_id="p${label}"><send>s${label}</send></participantstreamassoc>`,
        )
        .join('') +
      '</recording>';
    const offer = (version: number, lines: Array<[string, string]>) =>
      [
        'v=0',
        `o=x 1 ${version} IN IP4 127.0.0.1`,
        's=-',
        'c=IN IP4 127.0.0.1',
        't=0 0',
        ...lines.flatMap(([label, pts]) => [`m=audio 49170 RTP/AVP ${pts}`, `a=label:${label}`, 'a=sendonly']),
      ].join('\r\n') + '\r\n';

    // Dialog A (the agent's stream): no ACK at first, so the 200 comes again.
    const a = ua.dialog('per-invite-a');
    const okA = await a.request(
      'INVITE',
      'multipart/mixed;boundary=b1',
      multipart(offer(1, [['1', '0 101']]), meta([['1', 'sip:agent-7@cc.example.com', 'Agent Seven']])),
    );
    expect(okA.status).toBe(200);
    expect(okA.text).toMatch(/a=recvonly/);
    const again = await ua.next((m) => m.startsWith('SIP/2.0 200') && m.includes('Call-ID: per-invite-a'), 3000);
    expect(again).toBe(okA.text);
    a.ack(okA);
    // Dialog B (the customer's stream) of the same communication session.
    const b = ua.dialog('per-invite-b');
    const okB = await b.request(
      'INVITE',
      'multipart/mixed;boundary=b1',
      multipart(offer(1, [['2', '0']]), meta([['2', 'sip:+15550009999@pstn.example', 'Caller']])),
    );
    expect(okB.status).toBe(200);
    b.ack(okB);

    // One second of PCMU on A's stream, then a re-INVITE to PCMA adding a supervisor's stream, and
    // one second of PCMA: the agent's leg keeps its timeline across the codec change.
    const portA = Number(/m=audio (\d+)/.exec(okA.text)![1]);
    const speech = clip('librivox-0880').mulaw8k;
    const rtp = dgram.createSocket('udp4');
    const sendRtp = async (bytes: Buffer, pt: number, from: number) => {
      for (let i = 0; i * 160 < bytes.length; i++) {
        const payload = bytes.subarray(i * 160, (i + 1) * 160);
        rtp.send(
          encodeRtpPacket({ payloadType: pt, sequenceNumber: from + i, timestamp: (from + i) * 160, ssrc: 7, payload }),
          portA,
          '127.0.0.1',
        );
        if (i % 10 === 9) await sleep(20);
      }
    };
    await sendRtp(speech.subarray(0, 8000), 0, 0);
    const re = await a.request(
      'INVITE',
      'multipart/mixed;boundary=b1',
      multipart(
        offer(2, [
          ['1', '8'],
          ['3', '0'],
        ]),
        meta([
          ['1', 'sip:agent-7@cc.example.com', 'Agent Seven'],
          ['3', 'sip:supervisor@cc.example.org', 'Supervisor'],
        ]),
      ),
    );
    expect(re.status).toBe(200);
    expect(re.text).toMatch(new RegExp(`m=audio ${portA} RTP/AVP 8`));
    a.ack(re);
    await sendRtp(Buffer.from(encodeAlaw(decodeMulaw(speech.subarray(8000, 16000)))), 8, 50);
    await sleep(600);
    rtp.close();
    expect((await a.request('BYE')).status).toBe(200);
    expect((await b.request('BYE')).status).toBe(200);

    const call = await completedCall(session);
    expect(call.legs.map((l: any) => l.speaker)).toEqual(['agent', 'customer', 'customer-2']);
    const merged: any = await (
      await fetch(`${svc.baseUrl}${API}/stt/calls/${call.callId}/transcript?format=json`, { headers: { accessKey } })
    ).json();
    expect(merged.legs.map((l: any) => l.durationMs)).toEqual([2000, 0, 0]);

    // CANCEL right behind its INVITE: 200 for the CANCEL, 487 for the INVITE, no leg.
    const c = ua.dialog('cancelled-1');
    const pending = c.request('INVITE', 'application/sdp', offer(1, [['1', '0']]));
    c.cancel();
    expect((await pending).status).toBe(487);
    expect(ua.received((m) => m.startsWith('SIP/2.0 200') && m.includes('CSeq: 1 CANCEL'))).toBe(true);
    // The call may have been made before the CANCEL came; it holds no leg.
    for (const item of (await native(`${API}/stt/calls?externalId=cancelled-1`)).data.items) expect(item.legs).toEqual([]);
    expect(before - (await balance())).toBe(2n);
    ua.close();
  }, 60_000);
});

describe('SIPREC when the node stops', () => {
  it('an open recording session gets a BYE and the stop does not wait on it', async () => {
    const ua = await SipUa.open(sipPort);
    const d = ua.dialog('open-at-stop');
    const sdp = [
      'v=0',
      'o=x 1 1 IN IP4 127.0.0.1',
      's=-',
      'c=IN IP4 127.0.0.1',
      't=0 0',
      'm=audio 49170 RTP/AVP 0',
      'a=label:1',
      'a=sendonly',
      '',
    ].join('\r\n');
    const ok = await d.request('INVITE', 'application/sdp', sdp);
    expect(ok.status).toBe(200);
    d.ack(ok);
    const started = Date.now();
    const bye = ua.next((m) => m.startsWith('BYE ') && m.includes('Call-ID: open-at-stop'), 20_000);
    await svc.stop();
    expect(await bye).toMatch(/CSeq: 1 BYE/);
    expect(Date.now() - started).toBeLessThan(20_000);
    ua.close();
  }, 30_000);
});
