// `scribed gateway` end to end, one protocol-exact client per PBX protocol (no PBX is
// installable here: Debian 12 ships no Asterisk nor FreeSWITCH; docs/gateway.md): a real
// server, a real gateway process, real speech of two parties, one leg each. Each test checks
// that the server holds every sample the client sent on both legs, that each leg's words are
// its party's (WER), and that the merged transcript has party A's words before party B's.
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { encodeMulaw, encodePcm16le } from '../../src/core/audio/encodings.js';
import { encodeAudioSocketMessage, uuidBytes } from '../../src/gateway/audiosocket.js';
import {
  CLIPS,
  PBX_TOKEN,
  conversationPcm,
  callView,
  mergedTranscript,
  pace,
  report,
  sessionView,
  sleep,
  startRig,
  stopAll,
  werOf,
  type GatewayProcess,
  type Rig,
} from './harness.js';

let rig: Rig | null = null;
afterEach(async () => {
  if (rig) await stopAll(rig.children);
  rig = null;
});

// pocketsphinx's 8 kHz telephony model on these 3 s clips: WER 0.25-0.75 per leg across the
// protocols (measured; docs/gateway.md). A leg with the other party's words, or none, is >= 1.
const MAX_WER = 0.8;

interface ClosedLeg {
  speaker: string;
  sessionId: string;
  transcriptionId: string;
  callId: string;
  receivedSamples: number;
  serverCapturedSamples: number | null;
}

async function closedLegs(g: GatewayProcess, count: number): Promise<ClosedLeg[]> {
  const lines = await g.waitFor((l) => l.msg === 'leg closed', count, 40_000);
  return lines.map((l) => ({
    speaker: l.speaker!,
    sessionId: l.sessionId!,
    transcriptionId: l.transcriptionId!,
    callId: l.callId!,
    receivedSamples: l.receivedSamples!,
    serverCapturedSamples: l.serverCapturedSamples ?? null,
  }));
}

/** Merged transcript of the legs, checked: both parties, right labels, A before B. */
async function checkCall(
  protocol: string,
  legs: ClosedLeg[],
  sent: Record<string, number>,
  heldOffset: Record<string, number> = {},
  externalId?: string,
) {
  expect(legs.map((l) => l.speaker).sort()).toEqual(['agent', 'customer']);
  // Both legs are sessions of one call, created with the PBX's call id.
  expect(legs[0]!.callId).toMatch(/^call_/);
  expect(legs[1]!.callId).toBe(legs[0]!.callId);
  const rows = [];
  const call = await mergedTranscript(rig!, legs[0]!.callId);
  if (externalId !== undefined) expect(call.externalId).toBe(externalId);
  const merged = call.segments;
  for (const leg of legs) {
    const view = await sessionView(rig!, leg.sessionId);
    const held = Number(view.capturedSamples);
    // Every sample the PBX client sent on this leg is on the server, none twice.
    expect(held, `${leg.speaker} held`).toBe(sent[leg.speaker]! + (heldOffset[leg.speaker] ?? 0));
    const wer = werOf(merged, leg.speaker, leg.speaker === 'customer' ? CLIPS.a : CLIPS.b);
    rows.push({ speaker: leg.speaker, sent: sent[leg.speaker]!, held, wer });
  }
  report(protocol, rows);
  for (const r of rows) expect(r.wer, `${protocol} ${r.speaker}: ${JSON.stringify(merged)}`).toBeLessThan(MAX_WER);
  // Time order across legs: the customer's turn comes first, the agent's after it.
  const firstAgent = merged.findIndex((s) => s.speaker === 'agent');
  const lastCustomer = merged.map((s) => s.speaker).lastIndexOf('customer');
  expect(lastCustomer, JSON.stringify(merged)).toBeLessThan(firstAgent);
  return merged;
}

// ------------------------------------------------------------------ Twilio Media Streams

/** A Twilio Media Streams client: the messages as Twilio's page documents them. */
async function twilioStream(
  wsPort: number,
  opts: {
    callSid: string;
    inbound: Uint8Array;
    outbound: Uint8Array;
    from: number;
    to: number;
    speed: number;
    token?: string;
    /** The agent the TwiML names (<Parameter name="agentId">). */
    agentId?: string;
    onProgress?: (sentSamples: number) => Promise<void> | void;
  },
): Promise<{ sent: number; closeCode: number }> {
  const ws = new WebSocket(`ws://127.0.0.1:${wsPort}/twilio`);
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve());
    ws.once('error', reject);
  });
  const closed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)));
  const streamSid = `MZ${opts.callSid.slice(2)}`;
  let seq = 1;
  const send = (m: Record<string, unknown>) => ws.send(JSON.stringify({ ...m, sequenceNumber: String(seq++) }));
  ws.send(JSON.stringify({ event: 'connected', protocol: 'Call', version: '1.0.0' }));
  send({
    event: 'start',
    streamSid,
    start: {
      streamSid,
      accountSid: 'AC00000000000000000000000000000000',
      callSid: opts.callSid,
      tracks: ['inbound', 'outbound'],
      customParameters: {
        inboundSpeaker: 'customer',
        outboundSpeaker: 'agent',
        gatewayToken: opts.token ?? PBX_TOKEN,
        ...(opts.agentId ? { agentId: opts.agentId } : {}),
      },
      mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 1 },
    },
  });
  const t0 = Date.now();
  let chunk = 1;
  let sent = 0;
  for (let off = opts.from; off < opts.to; off += 160) {
    const end = Math.min(off + 160, opts.to);
    const timestamp = String(Math.round(((off - opts.from) * 1000) / 8000));
    for (const [track, audio] of [
      ['inbound', opts.inbound],
      ['outbound', opts.outbound],
    ] as const) {
      send({
        event: 'media',
        streamSid,
        media: { track, chunk: String(chunk), timestamp, payload: Buffer.from(audio.subarray(off, end)).toString('base64') },
      });
    }
    chunk += 1;
    sent += end - off;
    if (chunk % 50 === 0) send({ event: 'mark', streamSid, mark: { name: `m${chunk}` } });
    await opts.onProgress?.(sent);
    await pace(t0, (sent * 1000) / 8000, opts.speed);
    if (ws.readyState !== WebSocket.OPEN) break;
  }
  if (ws.readyState === WebSocket.OPEN) {
    send({ event: 'dtmf', streamSid, dtmf: { track: 'inbound_track', digit: '5' } });
    send({ event: 'stop', streamSid, stop: { accountSid: 'AC00000000000000000000000000000000', callSid: opts.callSid } });
    ws.close(1000);
  }
  return { sent, closeCode: await closed };
}

describe('scribed gateway: Twilio Media Streams', () => {
  it('two tracks of one call become two legs; merged transcript in time order with the customParameters speakers and agent', async () => {
    rig = await startRig();
    const g = await rig.startGateway();
    const conv = conversationPcm(8000);
    const inbound = encodeMulaw(conv.a);
    const outbound = encodeMulaw(conv.b);
    const { sent } = await twilioStream(rig.wsPort, {
      callSid: 'CA0123456789abcdef0123456789abcdef',
      inbound,
      outbound,
      from: 0,
      to: inbound.length,
      speed: 2,
      agentId: 'agent-42',
    });
    const legs = await closedLegs(g, 2);
    for (const leg of legs) expect(leg.receivedSamples).toBe(sent);
    await checkCall('twilio', legs, { customer: sent, agent: sent }, {}, 'CA0123456789abcdef0123456789abcdef');
    // The TwiML's agentId parameter is the call's agent (docs/analytics.md, "Agents").
    expect((await callView(rig, legs[0]!.callId)).agentId).toBe('agent-42');
  }, 60_000);

  it('killing the gateway mid-call loses no acknowledged audio: a restarted gateway re-attaches both legs', async () => {
    rig = await startRig();
    let g = await rig.startGateway();
    const conv = conversationPcm(8000);
    const inbound = encodeMulaw(conv.a);
    const outbound = encodeMulaw(conv.b);
    const callSid = 'CAfeedfacefeedfacefeedfacefeedface';
    const cut = Math.round(inbound.length * 0.45);
    // First part, then SIGKILL while the call is live (no stop, no close).
    const gw = g;
    const first = twilioStream(rig.wsPort, {
      callSid,
      inbound,
      outbound,
      from: 0,
      to: inbound.length,
      speed: 2,
      onProgress: async (n) => {
        if (n >= cut && gw.proc.exitCode === null) {
          await sleep(1500); // acknowledgements of what was sent so far reach the gateway
          // On a loaded machine a leg can still be connecting: kill only once the server holds
          // some of each leg (the test is about acknowledged audio surviving), 10 s at most.
          for (const deadline = Date.now() + 10_000; Date.now() < deadline; await sleep(100)) {
            const legs = gw.lines.filter((l) => l.msg === 'leg streaming to its session');
            const held = await Promise.all(legs.map(async (l) => Number((await sessionView(rig!, l.sessionId!)).capturedSamples)));
            if (legs.length === 2 && held.every((h) => h > 0)) break;
          }
          gw.proc.kill('SIGKILL');
          await gw.exited;
        }
      },
    });
    const firstRun = await first;
    expect(firstRun.sent).toBeLessThan(inbound.length);
    const started = g.lines.filter((l) => l.msg === 'leg streaming to its session');
    expect(started).toHaveLength(2);
    // Both sessions are still open on the server (the gateway never closed them).
    for (const l of started) expect(['RECORDING', 'PAUSED']).toContain((await sessionView(rig, l.sessionId!)).status);
    // The PBX streams the rest of the call to the restarted gateway (same CallSid).
    g = await rig.startGateway();
    const second = await twilioStream(rig.wsPort, { callSid, inbound, outbound, from: firstRun.sent, to: inbound.length, speed: 2 });
    const legs = await closedLegs(g, 2);
    expect(legs.map((l) => l.sessionId).sort()).toEqual(started.map((l) => l.sessionId).sort());
    // What the server held of the first part: its answer to the re-attach (the stored view
    // can lag the live count by up to a second of progress).
    const reattached = g.lines.filter((l) => l.msg === 're-attached to an existing session');
    expect(reattached).toHaveLength(2);
    const heldAtKill: Record<string, number> = {};
    for (const l of reattached) {
      heldAtKill[l.speaker!] = Number(l.capturedSamples);
      // Some of the first part was acknowledged before the kill, never more than was sent.
      expect(heldAtKill[l.speaker!]).toBeGreaterThan(0);
      expect(heldAtKill[l.speaker!]).toBeLessThanOrEqual(firstRun.sent);
    }
    await checkCall('twilio (gateway killed)', legs, { customer: second.sent, agent: second.sent }, heldAtKill);
  }, 60_000);

  it('killing the server mid-call loses nothing: both legs resume and hold every sample sent', async () => {
    rig = await startRig();
    const g = await rig.startGateway();
    const conv = conversationPcm(8000);
    const inbound = encodeMulaw(conv.a);
    const outbound = encodeMulaw(conv.b);
    const cut = Math.round(inbound.length * 0.4);
    const r = rig;
    let killed = false;
    const { sent } = await twilioStream(rig.wsPort, {
      callSid: 'CAbeefbeefbeefbeefbeefbeefbeefbeef',
      inbound,
      outbound,
      from: 0,
      to: inbound.length,
      speed: 2,
      onProgress: async (n) => {
        if (!killed && n >= cut) {
          killed = true;
          const server = r.server;
          const exited = new Promise((resolve) => server.once('exit', resolve));
          server.kill('SIGKILL');
          await exited;
          void r.restartServer();
        }
      },
    });
    const legs = await closedLegs(g, 2);
    expect(g.lines.filter((l) => l.msg === 'session resumed').length).toBeGreaterThanOrEqual(2);
    await checkCall('twilio (server killed)', legs, { customer: sent, agent: sent });
  }, 60_000);

  it('a start without the gateway token is refused before any session; malformed messages are counted, not fatal', async () => {
    rig = await startRig();
    const g = await rig.startGateway(['--metrics-port', '0']);
    const refused = await twilioStream(rig.wsPort, {
      callSid: 'CA00000000000000000000000000000bad',
      inbound: new Uint8Array(1600),
      outbound: new Uint8Array(1600),
      from: 0,
      to: 1600,
      speed: 50,
      token: 'wrong-token-wrong-token',
    });
    expect(refused.closeCode).toBe(1008);
    await g.waitFor((l) => String(l.msg).startsWith('connection refused'));
    expect(g.lines.some((l) => l.msg === 'leg streaming to its session')).toBe(false);

    // Garbage among valid messages: the call goes on.
    const ws = new WebSocket(`ws://127.0.0.1:${rig.wsPort}/twilio`);
    await new Promise((resolve) => ws.once('open', resolve));
    ws.send('not json');
    ws.send(Buffer.from([1, 2, 3]));
    ws.send(JSON.stringify({ event: 'media', media: { track: 'inbound', chunk: '1', timestamp: '0', payload: '//8=' } })); // before start
    ws.send(
      JSON.stringify({
        event: 'start',
        start: {
          streamSid: 'MZ1',
          callSid: 'CA1',
          tracks: ['inbound'],
          customParameters: { gatewayToken: PBX_TOKEN },
          mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 1 },
        },
      }),
    );
    ws.send(JSON.stringify({ event: 'media', media: { track: 'inbound', chunk: '1', timestamp: '0', payload: '***' } }));
    ws.send(JSON.stringify({ event: 'media', media: { track: 'outbound', chunk: '1', timestamp: '0', payload: '//8=' } })); // not in tracks
    ws.send(
      JSON.stringify({
        event: 'media',
        media: { track: 'inbound', chunk: '2', timestamp: '0', payload: Buffer.alloc(160, 0xff).toString('base64') },
      }),
    );
    ws.send(JSON.stringify({ event: 'stop' }));
    const [leg] = await closedLegs(g, 1);
    expect(leg!.receivedSamples).toBe(160);
    const invalid = g.lines.filter((l) => l.msg === 'invalid message ignored').map((l) => l.reason);
    expect(invalid).toEqual(['not_json', 'binary_frame', 'out_of_order', 'bad_payload', 'out_of_order']);
  }, 60_000);
});

// ------------------------------------------------------------------ mod_audio_fork / jambonz

describe('scribed gateway: mod_audio_fork / jambonz listen', () => {
  it('stereo L16 at 16 kHz: caller and callee channels become two legs, merged in time order', async () => {
    rig = await startRig();
    const g = await rig.startGateway();
    const conv = conversationPcm(16000);
    // Interleaved stereo: caller (channel 0) first, callee (channel 1) second.
    const stereo = new Int16Array(conv.a.length * 2);
    for (let i = 0; i < conv.a.length; i++) {
      stereo[2 * i] = conv.a[i]!;
      stereo[2 * i + 1] = conv.b[i]!;
    }
    const bytes = Buffer.from(encodePcm16le(stereo));
    const auth = `Basic ${Buffer.from(`fs:${PBX_TOKEN}`).toString('base64')}`;
    const ws = new WebSocket(`ws://127.0.0.1:${rig.wsPort}/fork`, 'audio.jambonz.org', { headers: { Authorization: auth } });
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    expect(ws.protocol).toBe('audio.jambonz.org');
    // jambonz's first frame: the call's attributes, sampleRate and mixType, plus our metadata.
    ws.send(
      JSON.stringify({
        callSid: 'b5e39996-bd2f-4bda-b928-355147186a2a',
        direction: 'inbound',
        from: '+15083084809',
        to: '+15083728299',
        sampleRate: 16000,
        mixType: 'stereo',
        metadata: { callerSpeaker: 'customer', calleeSpeaker: 'agent' },
      }),
    );
    const frame = 16000 * 0.02 * 4; // 20 ms of stereo L16
    const t0 = Date.now();
    for (let off = 0; off < bytes.length; off += frame) {
      // An odd split now and then: a frame boundary inside a sample must not swap channels.
      const piece = bytes.subarray(off, Math.min(off + frame, bytes.length));
      if (off % (frame * 7) === 0 && piece.length > 3) {
        ws.send(piece.subarray(0, 3));
        ws.send(piece.subarray(3));
      } else ws.send(piece);
      await pace(t0, ((off + piece.length) / 4 / 16000) * 1000, 2);
    }
    ws.close(1000);
    const legs = await closedLegs(g, 2);
    for (const leg of legs) expect(leg.receivedSamples).toBe(conv.a.length);
    await checkCall('fork', legs, { customer: conv.a.length, agent: conv.a.length }, {}, 'b5e39996-bd2f-4bda-b928-355147186a2a');
  }, 60_000);

  it('refuses a connection without the token (401) and metadata without a rate (1008)', async () => {
    rig = await startRig();
    const g = await rig.startGateway();
    const status = await new Promise<number>((resolve) => {
      const ws = new WebSocket(`ws://127.0.0.1:${rig!.wsPort}/fork`, 'audio.drachtio.org');
      ws.once('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
      ws.once('open', () => resolve(101));
    });
    expect(status).toBe(401);
    const ws = new WebSocket(`ws://127.0.0.1:${rig.wsPort}/fork`, 'audio.drachtio.org', {
      headers: { Authorization: `Bearer ${PBX_TOKEN}` },
    });
    await new Promise((resolve) => ws.once('open', resolve));
    const code = new Promise<number>((resolve) => ws.once('close', (c) => resolve(c)));
    ws.send(JSON.stringify({ uuid: 'abc' }));
    expect(await code).toBe(1008);
    await g.waitFor((l) => l.msg === 'invalid message ignored' && l.reason === 'bad_field');
  }, 60_000);
});

// ------------------------------------------------------------------ Asterisk AudioSocket

/** An AudioSocket client: the byte layout of Asterisk's res_audiosocket. */
async function audioSocketLeg(port: number, uuid: string, pcm: Int16Array, speed: number): Promise<number> {
  const socket = net.connect(port, '127.0.0.1');
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', () => resolve());
    socket.once('error', reject);
  });
  socket.write(encodeAudioSocketMessage(0x01, uuidBytes(uuid)));
  const bytes = Buffer.from(encodePcm16le(pcm));
  const t0 = Date.now();
  let sent = 0;
  for (let off = 0; off < bytes.length; off += 320) {
    const piece = bytes.subarray(off, Math.min(off + 320, bytes.length));
    socket.write(encodeAudioSocketMessage(0x10, piece));
    sent += piece.length / 2;
    if (off === 320 * 40) socket.write(encodeAudioSocketMessage(0x03, Buffer.from('7')));
    await pace(t0, (sent / 8000) * 1000, speed);
  }
  socket.write(encodeAudioSocketMessage(0x00));
  await new Promise<void>((resolve) => socket.once('close', () => resolve()));
  return sent;
}

describe('scribed gateway: Asterisk AudioSocket', () => {
  it('two connections whose UUIDs differ in the last byte are the two legs of one call', async () => {
    rig = await startRig();
    const g = await rig.startGateway();
    const conv = conversationPcm(8000);
    const call = '4f6a7c1e-8a43-4b1f-9d0e-3c2b1a0f9e';
    const [sentA, sentB] = await Promise.all([
      audioSocketLeg(rig.asPort, `${call}01`, conv.a, 2),
      audioSocketLeg(rig.asPort, `${call}02`, conv.b, 2),
    ]);
    const legs = await closedLegs(g, 2);
    await checkCall('audiosocket', legs, { customer: sentA, agent: sentB }, {}, `${call}00`);
    expect(g.lines.filter((l) => l.msg === 'audiosocket stream identified').map((l) => l.callExternalId)).toEqual([
      `${call}00`,
      `${call}00`,
    ]);
  }, 60_000);
});
