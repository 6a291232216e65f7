// The SBC side of bench/siprec-load.ts, in its own process so its CPU is not the recorder's:
// CALLS recording sessions over SIP/UDP (an INVITE with two PCMU m-lines, labels 1 and 2), each
// stream real speech (the sample clips' mu-law, looped) in 20 ms packets paced at real time
// from one clock (packets due by elapsed time, so a late tick sends what is due rather than
// drifting). Calls start STAGGER_MS apart. When every stream has sent SECONDS of audio it prints
// `rtp-done {...}` and waits for a line on stdin before it sends the BYEs (so the bench can read
// the receive sockets' drop counters while they are open), then prints `done {...}`.
// Usage: node bench/siprec-load-sender.mjs SIP_PORT CALLS SECONDS SAMPLES_DIR
import dgram from 'node:dgram';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';

const [sipPort, calls, seconds] = process.argv.slice(2, 5).map(Number);
const samplesDir = process.argv[5];
const STAGGER_MS = 100;
const HOST = '127.0.0.1';

const clips = fs
  .readdirSync(samplesDir)
  .filter((f) => f.endsWith('.ulaw'))
  .sort()
  .map((f) => fs.readFileSync(path.join(samplesDir, f)));
const speech = Buffer.concat(clips);

const sip = dgram.createSocket('udp4');
const rtp = dgram.createSocket('udp4');
await new Promise((r) => sip.bind(0, HOST, r));
await new Promise((r) => rtp.bind(0, HOST, r));
const sipLocal = sip.address().port;
const waiting = new Map(); // "callId|cseq" -> resolve
sip.on('message', (m) => {
  const text = m.toString();
  if (!text.startsWith('SIP/2.0 ')) return; // requests from the recorder (none expected)
  const status = Number(text.slice(8, 11));
  if (status < 200) return;
  const callId = /\r\nCall-ID: ([^\r]+)/i.exec(text)?.[1];
  const cseq = /\r\nCSeq: (\d+)/i.exec(text)?.[1];
  waiting.get(`${callId}|${cseq}`)?.({ status, text });
});

function request(callId, method, cseq, toTag, body = '') {
  const lines = [
    `${method} sip:srs@${HOST}:${sipPort} SIP/2.0`,
    `Via: SIP/2.0/UDP ${HOST}:${sipLocal};branch=z9hG4bK-${callId}-${cseq}-${method}`,
    `From: <sip:sbc@${HOST}>;tag=sbc-${callId}`,
    `To: <sip:srs@${HOST}>${toTag ? `;tag=${toTag}` : ''}`,
    `Call-ID: ${callId}`,
    `CSeq: ${cseq} ${method}`,
    `Contact: <sip:sbc@${HOST}:${sipLocal}>`,
    'Max-Forwards: 70',
    ...(body ? ['Content-Type: application/sdp'] : []),
    `Content-Length: ${Buffer.byteLength(body)}`,
    '',
    body,
  ];
  const bytes = Buffer.from(lines.join('\r\n'));
  if (method === 'ACK') return sip.send(bytes, sipPort, HOST);
  return new Promise((resolve, reject) => {
    let tries = 0;
    const send = () => {
      if (tries++ > 6) return reject(new Error(`${method} ${callId}: no answer`));
      sip.send(bytes, sipPort, HOST);
      timer = setTimeout(send, 500 * 2 ** Math.min(tries, 3));
    };
    let timer;
    waiting.set(`${callId}|${cseq}`, (res) => {
      clearTimeout(timer);
      waiting.delete(`${callId}|${cseq}`);
      resolve(res);
    });
    send();
  });
}

const sdp = ['v=0', `o=sbc 1 1 IN IP4 ${HOST}`, 's=-', `c=IN IP4 ${HOST}`, 't=0 0'];
for (const label of ['1', '2']) sdp.push('m=audio 40000 RTP/AVP 0', 'a=rtpmap:0 PCMU/8000', `a=label:${label}`, 'a=sendonly');
const offer = sdp.join('\r\n') + '\r\n';

const streams = [];
const dialogs = [];
let packetsSent = 0;
let maxLateMs = 0;
const started = performance.now();
const PACKETS = Math.round((seconds * 1000) / 20);

const header = Buffer.alloc(12);
// The pacing clock runs from the first call on: streams join it as their calls are answered.
let settingUp = true;
const paced = new Promise((resolve) => {
  const tick = () => {
    const now = performance.now();
    let pending = 0;
    for (const s of streams) {
      const due = Math.min(PACKETS, Math.floor((now - s.t0) / 20) + 1);
      if (due - s.sent > 1) maxLateMs = Math.max(maxLateMs, (due - s.sent - 1) * 20);
      while (s.sent < due) {
        let payload = speech.subarray(s.at, s.at + 160);
        if (payload.length < 160) payload = Buffer.concat([payload, speech.subarray(0, 160 - payload.length)]);
        s.at = (s.at + 160) % speech.length;
        header[0] = 0x80;
        header[1] = 0;
        header.writeUInt16BE(s.seq & 0xffff, 2);
        header.writeUInt32BE(s.ts >>> 0, 4);
        header.writeUInt32BE(s.ssrc >>> 0, 8);
        rtp.send(Buffer.concat([header, payload]), s.port, HOST);
        s.seq++;
        s.ts += 160;
        s.sent++;
        packetsSent++;
      }
      if (s.sent < PACKETS) pending++;
    }
    if (pending === 0 && !settingUp) return resolve();
    setTimeout(tick, 20 - ((performance.now() - started) % 20));
  };
  tick();
});

for (let c = 0; c < calls; c++) {
  const callId = `bench-${process.pid}-${c}`;
  const ok = await request(callId, 'INVITE', 1, '', offer);
  if (ok.status !== 200) throw new Error(`INVITE ${callId}: ${ok.status}`);
  const toTag = /\r\nTo: [^\r]*;tag=([^;\r]+)/i.exec(ok.text)[1];
  request(callId, 'ACK', 1, toTag);
  dialogs.push({ callId, toTag });
  const ports = [...ok.text.matchAll(/m=audio (\d+)/g)].map((m) => Number(m[1]));
  ports.forEach((port, i) => {
    // Each stream starts at its own place in the speech, so no two streams carry the same audio.
    const at = ((c * 2 + i) * 8000 * 3.7) % speech.length;
    streams.push({ port, ssrc: (c << 1) | i, seq: c * 100, ts: c * 1000, at: Math.floor(at), t0: performance.now(), sent: 0 });
  });
  await new Promise((r) => setTimeout(r, Math.max(0, started + (c + 1) * STAGGER_MS - performance.now())));
}

settingUp = false;
await paced;

const cpu = process.cpuUsage();
console.log(`rtp-done ${JSON.stringify({ packetsSent, streams: streams.length, maxLateMs, cpuSeconds: (cpu.user + cpu.system) / 1e6 })}`);
await new Promise((r) => readline.createInterface({ input: process.stdin }).once('line', r));
let byes = 0;
await Promise.all(
  dialogs.map(async (d) => {
    const res = await request(d.callId, 'BYE', 2, d.toTag);
    if (res.status === 200) byes++;
  }),
);
console.log(`done ${JSON.stringify({ byes })}`);
sip.close();
rtp.close();
process.exit(0);
