// Run in a child process by test/server/facades/assemblyai-streaming.test.ts, with
// NODE_EXTRA_CA_CERTS naming the test certificate (Node reads it at start only): AssemblyAI's
// own streaming transcriber (`client.streaming.transcriber`, which connects only over wss)
// against scribed behind HAProxy's TLS. Argument: JSON {baseURL (https://...), key, mode, ...}.
// Prints one JSON line with what the SDK saw.
//   mode 'stream': a transcriber with `params` (and the temporary token when `token` is set:
//     one is asked for first, with the key), the audio file sent in `chunkMs` messages paced at
//     `speed` x real time, then `trailingSilenceMs` of silence; `forceEndpoint`: a
//     ForceEndpoint after the audio; then close() (Terminate, waiting for Termination).
//     With `reuseToken` the token is then tried again on a new transcriber; with
//     `expiredToken` a 1 s token is tried after 2 s.
//   mode 'badKey': `rounds` transcribers on one client with its (wrong) key, each one's error.
import fs from 'node:fs';
import { AssemblyAI } from 'assemblyai';

const a = JSON.parse(process.argv[2]);
const wssBase = `${a.baseURL.replace(/^https:/, 'wss:')}/v3/ws`;
const client = new AssemblyAI({ apiKey: a.key, streamingBaseUrl: a.baseURL });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
// The SDK warns on the console about retries and deprecations: keep stdout for the result.
console.warn = () => {};

function transcriber(extra) {
  const t0 = performance.now();
  const t = client.streaming.transcriber({
    websocketBaseUrl: wssBase,
    connectTimeout: 20_000,
    maxConnectionRetries: 0,
    ...a.params,
    ...extra,
  });
  const seen = { events: [], errors: [], closed: null, termination: null };
  t.on('open', (e) => seen.events.push({ ...e, at: performance.now() - t0 }));
  t.on('turn', (e) => seen.events.push({ ...e, at: performance.now() - t0 }));
  t.on('error', (err) => seen.errors.push({ message: err.message, code: err.code }));
  t.on('close', (code, reason) => (seen.closed = { code, reason }));
  return { t, t0, seen };
}

async function refusal(extra) {
  const { t } = transcriber(extra);
  try {
    await t.connect();
    await t.close(false);
    return { message: 'connected', code: null };
  } catch (err) {
    return { message: err.message, code: err.code ?? null };
  }
}

const out = {};
if (a.mode === 'badKey') {
  out.refusals = [];
  for (let i = 0; i < a.rounds; i++) out.refusals.push(await refusal({}));
  // A refused parameter on the same client (with the good key it would open).
} else {
  let token;
  if (a.token) token = await client.streaming.createTemporaryToken({ expires_in_seconds: 60 });
  const c = transcriber(token ? { token, apiKey: undefined } : {});
  await c.t.connect();
  c.t.socket.addEventListener('message', ({ data }) => {
    const m = JSON.parse(data.toString());
    if (m.type === 'Termination') c.seen.termination = { ...m, at: performance.now() - c.t0 };
  });
  const audio = fs.readFileSync(a.audioFile);
  const bytesPerMs = a.bytesPerSecond / 1000;
  const chunk = Math.round(a.chunkMs * bytesPerMs);
  const silence = Buffer.alloc(Math.round((a.trailingSilenceMs ?? 0) * bytesPerMs), a.silenceByte ?? 0);
  const all = Buffer.concat([audio, silence]);
  const started = performance.now();
  out.firstAudioAt = started - c.t0;
  for (let at = 0, n = 0; at < all.length; at += chunk, n++) {
    const piece = all.subarray(at, at + chunk);
    c.t.sendAudio(piece.buffer.slice(piece.byteOffset, piece.byteOffset + piece.length));
    const wait = started + ((n + 1) * a.chunkMs) / a.speed - performance.now();
    if (wait > 0) await sleep(wait);
  }
  if (a.forceEndpoint) {
    out.forceEndpointAt = performance.now() - c.t0;
    c.t.forceEndpoint();
    const end = Date.now() + 20_000;
    while (!c.seen.events.some((e) => e.type === 'Turn' && e.end_of_turn) && Date.now() < end) await sleep(50);
  }
  if (a.waitMs) await sleep(a.waitMs);
  out.terminateAt = performance.now() - c.t0;
  const socket = c.t.socket;
  await c.t.close(true, 20_000);
  out.readyState = socket.readyState;
  Object.assign(out, c.seen);
  if (token) out.token = token;
  if (a.reuseToken) out.reused = await refusal({ token, apiKey: undefined });
  if (a.expiredToken) {
    const short = await client.streaming.createTemporaryToken({ expires_in_seconds: 1 });
    await sleep(2000);
    out.expired = await refusal({ token: short, apiKey: undefined });
  }
  if (a.badParams) out.badParams = await refusal(a.badParams);
}
process.stdout.write(`${JSON.stringify(out)}\n`);
process.exit(0);
