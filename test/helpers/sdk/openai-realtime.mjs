// Run in a child process by test/server/facades/openai-realtime.test.ts, with
// NODE_EXTRA_CA_CERTS naming the test certificate (Node reads it at start only): OpenAI's own
// Realtime client (`openai/realtime/ws`, intent transcription, which always connects over wss)
// against scribed behind HAProxy's TLS. Argument: JSON {baseURL, key, mode, ...}. Prints one
// JSON line with what the SDK saw.
//   mode 'stream': session.update (format, turn detection), the audio file in appends of
//     `chunkMs` paced at `speed` x real time, then `trailingSilenceMs` of silence (VAD mode) or
//     a commit (manual); waits for `completions` completed events or `waitMs`.
//   mode 'badKey': `rounds` sockets with the client's (wrong) key, each one's error.
//   mode 'events': sends the raw `send` events after session.created, reports what came back.
import fs from 'node:fs';
import OpenAI from 'openai';
import { OpenAIRealtimeWS } from 'openai/realtime/ws';

const a = JSON.parse(process.argv[2]);
const client = new OpenAI({ apiKey: a.key, baseURL: a.baseURL, maxRetries: 0 });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function connect() {
  const rt = new OpenAIRealtimeWS({ intent: 'transcription' }, client);
  const t0 = performance.now();
  const events = [];
  const errors = [];
  let closed = null;
  const waiters = [];
  const wake = () => waiters.splice(0).forEach((w) => w());
  rt.on('event', (e) => {
    events.push({ ...e, at: performance.now() - t0 });
    wake();
  });
  rt.on('error', (err) => {
    errors.push(err.message);
    wake();
  });
  rt.socket.on('close', (code, reason) => {
    closed = { code, reason: String(reason) };
    wake();
  });
  const until = async (pred, ms) => {
    const end = Date.now() + ms;
    while (!pred() && Date.now() < end) await new Promise((r) => (waiters.push(r), setTimeout(r, 50)));
    return pred();
  };
  return {
    rt,
    t0,
    events,
    errors,
    until,
    get closed() {
      return closed;
    },
  };
}

const out = {};
if (a.mode === 'badKey') {
  out.errors = [];
  for (let i = 0; i < a.rounds; i++) {
    const c = connect();
    await c.until(() => c.errors.length > 0 || c.closed, 5000);
    out.errors.push(c.errors[0] ?? `no error (closed ${JSON.stringify(c.closed)})`);
    c.rt.close();
  }
} else if (a.mode === 'events') {
  const c = connect();
  await c.until(() => c.events.some((e) => e.type === 'session.created'), 5000);
  for (const e of a.send) {
    c.rt.send(e);
    await sleep(100);
  }
  await sleep(a.waitMs ?? 1000);
  out.events = c.events;
  out.errors = c.errors;
  c.rt.close();
} else {
  const c = connect();
  await c.until(() => c.events.some((e) => e.type === 'session.created'), 5000);
  c.rt.send({ type: 'session.update', session: a.session });
  await c.until(() => c.events.some((e) => e.type === 'session.updated' || e.type === 'error'), 5000);
  const audio = fs.readFileSync(a.audioFile);
  const bytesPerMs = a.bytesPerSecond / 1000;
  const chunk = Math.round(a.chunkMs * bytesPerMs);
  const silence = Buffer.alloc(Math.round((a.trailingSilenceMs ?? 0) * bytesPerMs), a.silenceByte ?? 0);
  const all = Buffer.concat([audio, silence]);
  const started = performance.now();
  out.firstAudioAt = started - c.t0;
  for (let at = 0, n = 0; at < all.length; at += chunk, n++) {
    c.rt.send({ type: 'input_audio_buffer.append', audio: all.subarray(at, at + chunk).toString('base64') });
    const due = started + ((n + 1) * a.chunkMs) / a.speed;
    const wait = due - performance.now();
    if (wait > 0) await sleep(wait);
  }
  if (a.commit) c.rt.send({ type: 'input_audio_buffer.commit' });
  await c.until(
    () => c.events.filter((e) => e.type === 'conversation.item.input_audio_transcription.completed').length >= a.completions,
    a.waitMs,
  );
  out.events = c.events.map((e) => (e.type === 'session.created' || e.type === 'session.updated' ? e : { ...e, session: undefined }));
  out.errors = c.errors;
  c.rt.close();
  await c.until(() => c.closed, 3000);
  out.closed = c.closed;
}
process.stdout.write(`${JSON.stringify(out)}\n`);
process.exit(0);
