// The live transcript console (docs/console.md) in a real browser: Debian's chromium driven by
// playwright-core, a real scribed service, real speech, and the example backend of
// docs/console.md (extracted from the doc) doing key -> ticket -> redirect, the renew hand-off
// and the History downloads.
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { startService, tempDir, type TestService } from '../helpers/service.js';
import { CLI } from '../helpers/serve-process.js';
import { loadClips, devSetDir } from '../helpers/audio.js';
import { HandshakeRefused, StreamClient } from '../helpers/stream-client.js';
import { createSession } from '../helpers/live.js';
import { wordErrorRate } from '../../src/core/wer.js';
import { launchChromium, startBackend, type Backend } from './browser.js';
import { axeViolations } from '../helpers/axe.js';

const clips = loadClips(devSetDir());
const clip = (id: string) => clips.find((c) => c.id === id)!;
// The docs' screenshot is rewritten only when asked (SCRIBED_UPDATE_SCREENSHOT=1), so a test
// run leaves the working tree as it found it.
const SCREENSHOT =
  process.env.SCRIBED_UPDATE_SCREENSHOT === '1'
    ? path.resolve(import.meta.dirname, '../../docs/console-live.png')
    : path.join(tempDir('scribed-console-'), 'console-live.png');

let svc: TestService;
let accessKey: string;
let backend: Backend;
let browser: Browser;

beforeAll(async () => {
  svc = await startService({ maxDecoders: 2 });
  accessKey = (await svc.account(100_000n)).accessKey;
  backend = await startBackend(svc.baseUrl, accessKey);
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  backend?.stop();
  await svc?.stop();
});

interface TranscriptJson {
  text: string;
  segments: Array<{ text: string; words: Array<{ word: string; confidence: number | null }> }>;
}

async function transcript(transcriptionId: string): Promise<TranscriptJson> {
  const res = await fetch(`${svc.baseUrl}/sound_clone/api/v1/stt/transcriptions/${transcriptionId}/transcript?format=json`, {
    headers: { accessKey },
  });
  expect(res.status).toBe(200);
  return (await res.json()) as TranscriptJson;
}

const pageFinals = (page: Page) => page.$$eval('#finals li:not([hidden]) .text', (els) => els.map((e) => e.textContent ?? ''));
/** The page's source line (`Audio file: ...`, `Listen only: ...`) starts with `prefix`. */
const sourceIs = (page: Page, prefix: string, timeout = 30_000) =>
  page.waitForFunction((p) => (globalThis as any).document.getElementById('source-state').textContent.startsWith(p), prefix, { timeout });

// Functions given to page.evaluate/waitForFunction run in the page (serialized by Playwright,
// so not subject to the page's CSP, which forbids string eval); the tests are type-checked
// without the DOM library, hence `globalThis as any` there.

/** Partial texts as the page shows them, in order, with the count of finals shown at the time. */
/** Partial texts as the page shows them, in order, with the count of finals shown at the time
 * (a MutationObserver the test installs; the page itself keeps no such list). */
async function recordPartials(page: Page): Promise<void> {
  await page.evaluate(() => {
    const w = globalThis as any;
    w.partials = [];
    const el = w.document.getElementById('partial');
    new w.MutationObserver(() => {
      const text = el.textContent ?? '';
      if (text !== '') w.partials.push({ text, finals: w.document.querySelectorAll('#finals li').length });
    }).observe(el, { childList: true, characterData: true, subtree: true });
  });
}

describe('the console page', () => {
  it('is served at /console/ with a CSP that keeps it to its own origin; no CORS on the API', async () => {
    const res = await fetch(`${svc.baseUrl}/console/`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    expect(res.headers.get('content-security-policy')).toMatch(/connect-src 'self'/);
    expect(res.headers.get('content-security-policy')).toMatch(/script-src 'self'/);
    expect(res.headers.get('referrer-policy')).toBe('no-referrer');
    const again = await fetch(`${svc.baseUrl}/console/console.js`, { headers: { 'if-none-match': res.headers.get('etag') ?? '' } });
    expect(again.headers.get('content-type')).toMatch(/^text\/javascript/);
    const redirect = await fetch(`${svc.baseUrl}/console`, { redirect: 'manual' });
    expect([redirect.status, redirect.headers.get('location')]).toEqual([301, '/console/']);
    const missing = await fetch(`${svc.baseUrl}/console/plugin.ts`);
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as { message: string }).message).toMatch(/^NOT_FOUND/);
    expect((await fetch(`${svc.baseUrl}/console/..%2F..%2Fpackage.json`)).status).toBe(404);
    // The decision of docs/security.md: a page on another origin gets no CORS grant, preflight
    // or not, so only backends (which may hold the key) call the HTTP API.
    const preflight = await fetch(`${svc.baseUrl}/sound_clone/api/v1/stt/realtime/sessions`, {
      method: 'OPTIONS',
      headers: {
        origin: 'https://elsewhere.example',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'accesskey',
      },
    });
    expect(preflight.headers.get('access-control-allow-origin')).toBeNull();
    const create = await fetch(`${svc.baseUrl}/sound_clone/api/v1/account`, {
      headers: { origin: 'https://elsewhere.example', accessKey },
    });
    expect(create.status).toBe(200);
    expect(create.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('live view: partials, then finals equal to the transcript download; History links through the backend; screenshot', async () => {
    const page = await browser.newPage({ viewport: { width: 1100, height: 900 } });
    try {
      await page.goto(`${backend.url}/console?encoding=pcm_s16le_16000`);
      await page.waitForSelector('#connection[data-state="open"]');
      // The ticket left the address bar: a reload cannot replay it.
      expect(page.url()).toMatch(/\/console\/#session=rts_/);
      expect(page.url()).not.toMatch(/ticket=/);
      await recordPartials(page);

      // First clip, streamed by the page in real time, then committed: one final.
      const first = clip('librivox-0870');
      await page.setInputFiles('#file', first.wavFile);
      await sourceIs(page, 'Audio file');
      await sourceIs(page, 'Listen only');
      await page.click('#commit');
      await page.waitForSelector('#finals li:not([hidden])', { timeout: 30_000 });

      // Second clip: the screenshot is the live view mid-sentence, a final above the partial.
      const second = clip('librivox-0890');
      await page.setInputFiles('#file', second.wavFile);
      await page.waitForFunction(() => (globalThis as any).document.getElementById('partial').textContent.split(' ').length >= 4, null, {
        timeout: 30_000,
      });
      await page.screenshot({ path: SCREENSHOT, fullPage: true });
      await sourceIs(page, 'Listen only');
      await page.click('#close');
      await page.waitForSelector('#connection[data-state="closed"]', { timeout: 60_000 });

      const partials = (await page.evaluate(() => (globalThis as any).partials)) as Array<{ text: string; finals: number }>;
      const finals = await pageFinals(page);
      expect(finals).toHaveLength(2);
      // Partials came before each final, growing: several distinct ones per segment.
      expect(new Set(partials.filter((p) => p.finals === 0).map((p) => p.text)).size).toBeGreaterThanOrEqual(3);
      expect(new Set(partials.filter((p) => p.finals === 1).map((p) => p.text)).size).toBeGreaterThanOrEqual(3);
      // Real speech was heard.
      expect(wordErrorRate(first.reference, finals[0]!).wer).toBeLessThan(0.5);
      expect(wordErrorRate(second.reference, finals[1]!).wer).toBeLessThan(0.5);
      // Times on the session clock: the second final starts after the first clip.
      const times = await page.$$eval('#finals li:not([hidden]) time', (els) => els.map((e) => e.textContent));
      expect(times[0]).toMatch(/^0:00\.\d-0:0[6-8]\.\d$/);

      // The same text as the transcript download: through the backend's History link ...
      const txtHref = await page.getAttribute('#history-links a[data-format="txt"]', 'href');
      expect(txtHref).toMatch(new RegExp(`^${backend.url}/transcripts/stt_`));
      const viaBackend = await (await fetch(txtHref!)).text();
      expect(viaBackend.trim().split('\n')).toEqual(finals.map((f) => f.trim()));
      // ... and directly with the key.
      const transcriptionId = /transcripts\/(stt_[^?]+)/.exec(txtHref!)![1]!;
      const stored = await transcript(transcriptionId);
      expect(stored.text).toBe(finals.map((f) => f.trim()).join(' '));
      // Words are marked exactly where the final's confidence is under 0.5 (none when the
      // recognizer gives null, as pocketsphinx does on the live path today).
      const low = stored.segments.flatMap((seg) => seg.words.filter((w) => w.confidence !== null && w.confidence < 0.5).map((w) => w.word));
      expect(await page.$$eval('#finals mark.low', (els) => els.map((e) => e.textContent))).toEqual(low);
      expect(fs.statSync(SCREENSHOT).size).toBeGreaterThan(10_000);
    } finally {
      await page.close();
    }
  }, 120_000);

  it('a replayed ticket: the page says the ticket was refused and asks for a fresh one', async () => {
    const session = await createSession(svc, accessKey, { inputEncoding: 'mulaw_8000' });
    const ticketRes = await fetch(`${svc.baseUrl}/sound_clone/api/v1/stt/realtime/sessions/${session.sessionId}/tickets`, {
      method: 'POST',
      headers: { accessKey },
    });
    const ticket = ((await ticketRes.json()) as { data: { ticket: string } }).data.ticket;
    // Used once, by another client.
    const first = await StreamClient.connect(`${svc.wsBase}${session.streamUrl}?ticket=${ticket}`);
    await first.next('ready');
    first.control({ type: 'close' });
    await first.next('closed');

    const page = await browser.newPage();
    try {
      await page.goto(`${svc.baseUrl}/console/#session=${session.sessionId}&ticket=${ticket}`);
      await page.waitForSelector('#connection[data-state="refused"]');
      const alert = page.locator('[role="alert"]');
      await expect.poll(() => alert.textContent()).toMatch(/refused this ticket/);
      expect(await alert.textContent()).toMatch(/already used/);
      expect(await page.isVisible('#ticket-panel')).toBe(true);
      expect(await page.isVisible('#ticket-input')).toBe(true);
      expect(page.url()).not.toMatch(/ticket=/);
    } finally {
      await page.close();
    }
  }, 60_000);
});

/** `scribed stream` (dist/cli.js) on a file: the transcript text it writes with --out. */
function streamCli(file: string, encoding: string): Promise<string> {
  const out = tempDir();
  return new Promise((resolve, reject) => {
    // The console's sessions use the API default (manual segments); `scribed stream` defaults
    // to vad, whose segment edges would change words at them: compare like with like.
    const proc = spawn(
      process.execPath,
      [CLI, 'stream', '--url', svc.baseUrl, '--input', file, '--encoding', encoding, '--out', out, '--segment-commit-mode', 'manual'],
      {
        env: { ...process.env, SCRIBED_ACCESS_KEY: accessKey },
        stdio: ['ignore', 'ignore', 'pipe'],
      },
    );
    let stderr = '';
    proc.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
    proc.once('error', reject);
    proc.once('close', (code) => {
      const txt = fs.readdirSync(out).find((f) => f.endsWith('.txt'));
      if (code !== 0 || !txt) return reject(new Error(`scribed stream exited ${code}: ${stderr.slice(-2000)}`));
      resolve(fs.readFileSync(path.join(out, txt), 'utf8').trim().split('\n').join(' '));
    });
  });
}

const captured = (page: Page, which: 'local' | 'held') => page.getAttribute('#f-captured', `data-${which}`).then(Number);

describe('embedded in an application page', () => {
  it('a dropped socket: the console asks its parent for a ticket, the parent resumes and posts one back, the console reconnects', async () => {
    const session = await createSession(svc, accessKey, { inputEncoding: 'mulaw_8000' });
    const api = `${svc.baseUrl}/sound_clone/api/v1/stt/realtime/sessions/${session.sessionId}`;
    const ticket = async () =>
      ((await (await fetch(`${api}/tickets`, { method: 'POST', headers: { accessKey } })).json()) as any).data.ticket as string;
    const asked: string[] = [];
    // The application: a page framing the console, and the backend call behind it.
    const app = http.createServer(async (req, res) => {
      const url = new URL(req.url!, 'http://x');
      if (url.pathname === '/ticket') {
        asked.push(url.searchParams.get('capturedSamples')!);
        const resumed = await fetch(`${api}/resume`, {
          method: 'POST',
          headers: { accessKey, 'content-type': 'application/json' },
          body: JSON.stringify({ capturedSamples: url.searchParams.get('capturedSamples') }),
        });
        expect(resumed.status).toBe(200);
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ ticket: await ticket() }));
        return;
      }
      const fragment = new URLSearchParams({
        session: session.sessionId,
        ticket: await ticket(),
        origin: `http://127.0.0.1:${(app.address() as AddressInfo).port}`,
      });
      res.writeHead(200, { 'content-type': 'text/html' }).end(`<!doctype html><title>App</title>
<iframe title="Live transcript" allow="microphone" width="900" height="700" src="${svc.baseUrl}/console/#${fragment}"></iframe>
<script>
  window.addEventListener('message', async (e) => {
    if (e.origin !== ${JSON.stringify(svc.baseUrl)} || e.data?.type !== 'scribed-console:need-ticket') return;
    const q = new URLSearchParams({ session: e.data.sessionId, capturedSamples: e.data.capturedSamples });
    const { ticket } = await (await fetch('/ticket?' + q)).json();
    e.source.postMessage({ type: 'scribed-console:ticket', sessionId: e.data.sessionId, ticket }, ${JSON.stringify(svc.baseUrl)});
  });
</script>`);
    });
    await new Promise<void>((resolve) => app.listen(0, '127.0.0.1', resolve));
    const page = await browser.newPage();
    try {
      await page.goto(`http://127.0.0.1:${(app.address() as AddressInfo).port}/`);
      const frame = page.frameLocator('iframe');
      await frame.locator('#connection[data-state="open"]').waitFor();
      for (const ws of svc.service.app.websocketServer.clients) ws.terminate();
      await frame
        .locator('#connection[data-state="open"]')
        .waitFor({ state: 'detached' })
        .catch(() => undefined);
      await expect.poll(() => frame.locator('#f-epoch').textContent(), { timeout: 15_000 }).toBe('2');
      await frame.locator('#connection[data-state="open"]').waitFor();
      expect(asked).toEqual(['0']);
      expect(await frame.locator('#events').textContent()).toMatch(/fresh ticket received from the application/);
    } finally {
      await page.close();
      app.close();
    }
  }, 60_000);
});

/** Stream a clip's 16 kHz PCM over a test's own stream socket, paced in real time (100 ms
 * frames) as a PBX gateway would; resolves on the last ack. */
async function feed(client: StreamClient, epoch: number, pcm: Buffer, from = 0): Promise<number> {
  const step = 1600;
  let offset = from;
  const t0 = Date.now();
  for (let at = 0; at < pcm.length / 2; at += step) {
    const frame = pcm.subarray(at * 2, Math.min(pcm.length, (at + step) * 2));
    client.audio(epoch, offset, frame);
    offset += frame.length / 2;
    const due = t0 + ((at + step) / 16000) * 1000;
    await new Promise((r) => setTimeout(r, Math.max(0, due - Date.now())));
  }
  await client.next('ack', (e) => e.epoch === epoch && e.sampleOffset === offset, 30_000);
  return offset;
}

/** Until the client has a partial that reaches within 0.5 s of session sample `end`: the
 * decoder caught up (partials of a segment stop once it is committed). */
async function decodedTo(client: StreamClient, end: number): Promise<void> {
  await expect.poll(() => client.ofType('partial').some((p) => Number(p.end.sample) >= end - 8000), { timeout: 30_000 }).toBe(true);
}

/** The test's stream socket for a session. This file's server lets an account stream one
 * session at a time (two recognizers), and the page of the test before may still be letting
 * its session's socket go: the place comes back within moments. */
async function pbxSocket(streamUrl: string): Promise<StreamClient> {
  for (let i = 0; ; i++) {
    try {
      const c = await StreamClient.connect(`${svc.wsBase}${streamUrl}`, { accessKey });
      await c.next('ready');
      return c;
    } catch (err) {
      if (!(err instanceof HandshakeRefused && err.status === 429) || i >= 100) throw err;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

describe('watching a call another client streams (mode=watch)', () => {
  it('the test streams real speech over the stream socket; the page, opened with a ticket, shows the partials and then the same finals the transcript download has, through a pause and a resume', async () => {
    const session = await createSession(svc, accessKey, { inputEncoding: 'pcm_s16le_16000' });
    const api = `${svc.baseUrl}/sound_clone/api/v1/stt/realtime/sessions/${session.sessionId}`;
    // The "PBX": the test's own stream socket, which the watching page must not disturb.
    let pbx = await pbxSocket(session.streamUrl);

    const page = await browser.newPage({ viewport: { width: 1100, height: 900 } });
    try {
      await page.goto(`${backend.url}/console?session=${session.sessionId}&watch=1`);
      await page.waitForSelector('#connection[data-state="open"]');
      expect(page.url()).toMatch(/mode=watch/);
      expect(page.url()).not.toMatch(/ticket=/);
      expect(await page.textContent('#connection')).toBe('Watching (epoch 1)');
      await sourceIs(page, 'Watching: this page is read-only');
      // No audio controls on a watching page.
      expect(await page.isVisible('#mic')).toBe(false);
      expect(await page.isVisible('#close')).toBe(false);
      await recordPartials(page);

      // First sentence, committed by the PBX.
      const first = clip('librivox-0870');
      let offset = await feed(pbx, 1, first.pcm16k);
      await decodedTo(pbx, offset);
      pbx.control({ type: 'commit' });
      await pbx.next('committed', (e) => e.segmentId === 'seg_0', 30_000);
      await page.waitForSelector('#finals li:not([hidden])', { timeout: 30_000 });

      // The PBX's connection drops: the session pauses, the page keeps watching and says so;
      // the PBX resumes and goes on in epoch 2, and the page follows without a new ticket.
      const firstPbx = pbx;
      pbx.terminate();
      await page.waitForFunction(
        () => /no client is streaming/.test((globalThis as any).document.getElementById('connection').textContent),
        null,
        { timeout: 15_000 },
      );
      const resumed = await fetch(`${api}/resume`, {
        method: 'POST',
        headers: { accessKey, 'content-type': 'application/json' },
        body: JSON.stringify({ capturedSamples: String(offset) }),
      });
      expect(resumed.status).toBe(200);
      pbx = await pbxSocket(session.streamUrl);
      await page.waitForFunction(
        () => (globalThis as any).document.getElementById('connection').textContent === 'Watching (epoch 2)',
        null,
        { timeout: 15_000 },
      );

      // Second sentence, then the PBX closes the session.
      const second = clip('librivox-0890');
      const base = offset;
      offset = await feed(pbx, 2, second.pcm16k);
      await decodedTo(pbx, base + offset);
      pbx.control({ type: 'close' });
      await pbx.next('closed', () => true, 60_000);
      await page.waitForSelector('#connection[data-state="closed"]', { timeout: 30_000 });

      const partials = (await page.evaluate(() => (globalThis as any).partials)) as Array<{ text: string; finals: number }>;
      const finals = await pageFinals(page);
      expect(finals).toHaveLength(2);
      // Partials before each final, growing as the call went on.
      expect(new Set(partials.filter((p) => p.finals === 0).map((p) => p.text)).size).toBeGreaterThanOrEqual(3);
      expect(new Set(partials.filter((p) => p.finals === 1).map((p) => p.text)).size).toBeGreaterThanOrEqual(3);
      // The finals the PBX got, word for word, and real speech heard.
      const pbxFinals = [...firstPbx.ofType('final'), ...pbx.ofType('final')].map((e) => e.text as string);
      expect(finals.map((f) => f.trim())).toEqual(pbxFinals.filter((t) => t.trim() !== '').map((t) => t.trim()));
      expect(wordErrorRate(first.reference, finals[0]!).wer).toBeLessThan(0.5);
      expect(wordErrorRate(second.reference, finals[1]!).wer).toBeLessThan(0.5);
      // The same text as the transcript download, directly with the key and through the
      // backend's History link.
      const stored = await transcript(session.transcriptionId);
      expect(stored.segments.map((g) => g.text.trim())).toEqual(finals.map((f) => f.trim()));
      const txtHref = await page.getAttribute('#history-links a[data-format="txt"]', 'href');
      expect(txtHref).toBe(`${backend.url}/transcripts/${session.transcriptionId}?format=txt`);
      expect((await (await fetch(txtHref!)).text()).trim().split('\n')).toEqual(finals.map((f) => f.trim()));
      // The page said what it saw: a client streaming, the pause, the client back.
      const events = await page.textContent('#events');
      expect(events).toMatch(/no client is streaming now/);
      expect(events).toMatch(/a client is streaming: epoch 2/);
      await pbx.closed;
    } finally {
      await page.close();
      // A failed run must not leave the account's one stream place taken for the next tests.
      pbx.terminate();
    }
  }, 120_000);
});

describe('microphone mode', () => {
  // With a 1 s lead of silence, about one run in three cut a word (the page's capture started
  // more than a second after the device's playback), so the words differed past the tolerance
  // (0.29-0.36 seen). The lead is now 4 s (below); the retry stays until CI runs show the cut
  // is gone, and the assertions are unchanged.
  it(
    'streams a clip from the fake capture device, survives a dropped socket through the renew hand-off, and matches scribed stream',
    async () => {
      const c = clip('librivox-0890');
      // Silence around the clip: Chromium's fake device starts playing the file (in a loop) when
      // getUserMedia opens it, and the page's worklet starts capturing later (on a loaded machine,
      // more than a second later), so the capture is the loop from that point on. The lead of
      // silence is longer than that delay, and the page captures one loop's length: what it
      // misses at the start is silence, and the wrap-around brings in the next loop's silence.
      const LEAD_SECONDS = 4;
      const TAIL_SECONDS = 1.5;
      const padded = path.join(tempDir(), 'mic.wav');
      execFileSync('sox', [c.wavFile, padded, 'pad', String(LEAD_SECONDS), String(TAIL_SECONDS)]);
      const target = Math.round((c.durationSec + LEAD_SECONDS + TAIL_SECONDS) * 8000);
      const micBrowser = await launchChromium({ fakeAudioFile: padded });
      try {
        const context = await micBrowser.newContext();
        await context.grantPermissions(['microphone'], { origin: svc.baseUrl });
        const page = await context.newPage();
        await page.goto(`${backend.url}/console?encoding=mulaw_8000`);
        await page.waitForSelector('#connection[data-state="open"]');
        await page.click('#mic');
        await sourceIs(page, 'Microphone');
        expect(await page.getAttribute('#mic', 'aria-pressed')).toBe('true');

        // Mid-clip the connection drops (the server's end of every socket is cut).
        await page.waitForFunction(
          (n) => Number((globalThis as any).document.getElementById('f-captured').dataset.local) >= n,
          target * 0.4,
          { timeout: 30_000 },
        );
        for (const ws of svc.service.app.websocketServer.clients) ws.terminate();
        await page.waitForSelector('#connection[data-state="dropped"]');
        expect(await page.isVisible('#ticket-panel')).toBe(true);
        // The user asks for a fresh ticket: the backend's renew page resumes the session at the
        // page's cursor and posts a ticket back; the page reconnects in epoch 2 and sends what
        // the server lacks, while the microphone kept capturing.
        const popup = page.waitForEvent('popup');
        await page.click('#renew');
        await (await popup).waitForEvent('close');
        await page.waitForSelector('#connection[data-state="open"]', { timeout: 15_000 });
        expect(await page.textContent('#f-epoch')).toBe('2');
        expect(await page.textContent('#events')).toMatch(/ready: epoch 2/);

        await page.waitForFunction((n) => Number((globalThis as any).document.getElementById('f-captured').dataset.local) >= n, target, {
          timeout: 30_000,
        });
        await page.click('#close');
        await page.waitForSelector('#connection[data-state="closed"]', { timeout: 60_000 });
        // Nothing lost, nothing twice: the server holds exactly what the page captured.
        expect(await captured(page, 'held')).toBe(await captured(page, 'local'));
        expect(await captured(page, 'local')).toBeGreaterThanOrEqual(target);
        expect(await page.textContent('#f-pending')).toMatch(/^0 samples/);

        const json = await page.getAttribute('#history-links a[data-format="json"]', 'href');
        const transcriptionId = /transcripts\/(stt_[^?]+)/.exec(json!)![1]!;
        const fromPage = (await transcript(transcriptionId)).text;
        const fromCli = await streamCli(padded, 'mulaw_8000');
        const diff = wordErrorRate(fromCli, fromPage);
        process.stderr.write(
          `console microphone vs scribed stream (mu-law 8 kHz): WER ${diff.wer.toFixed(3)}\n  page: ${fromPage}\n  cli:  ${fromCli}\n`,
        );
        // The same words as the CLI's, give or take a few: the two paths resample differently
        // (Chromium's device at 44.1 kHz through the page's worklet, against ffmpeg from the
        // file), and the page's capture starts at an arbitrary point of the device's loop of the
        // file, so the recognizer hears almost, not exactly, the same samples. Measured: 0 or 1
        // word of 14 with the wider beams before issue 13; with its narrower ones (docs/engines.md,
        // "Beams") the clip's last words ("ill disposed") come out differently from run to run on
        // such near-identical samples ("old clothes", "old post", "all of those"): 1-4 words of
        // 14, and against the reference the page's words 0-3 errors off the CLI's. Audio the
        // page garbled or lost would be most of the words.
        expect(wordErrorRate(c.reference, fromCli).wer).toBeLessThan(0.5);
        expect(diff.wer).toBeLessThanOrEqual(0.3);
        expect(wordErrorRate(c.reference, fromPage).wer).toBeLessThanOrEqual(wordErrorRate(c.reference, fromCli).wer + 0.25);
      } finally {
        await micBrowser.close();
      }
    },
    { timeout: 120_000, retry: 2 },
  );
});

describe('accessibility and small screens', () => {
  it('axe finds no violations connected, closed or asking for a ticket; keyboard works with a visible focus', async () => {
    // bypassCSP only so that axe-core can be added to the page; the page's own code is unchanged.
    const context = await browser.newContext({ bypassCSP: true, viewport: { width: 1000, height: 900 } });
    try {
      const page = await context.newPage();
      await page.goto(`${backend.url}/console?encoding=mulaw_8000`);
      await page.waitForSelector('#connection[data-state="open"]');
      await page.setInputFiles('#file', clip('librivox-0880').wavFile);
      await sourceIs(page, 'Audio file');
      await sourceIs(page, 'Listen only');
      expect(await axeViolations(page)).toEqual([]);

      // Keyboard: Tab reaches every control in order, focus is visible, Enter operates.
      const order: string[] = [];
      await page.locator('body').focus();
      for (let i = 0; i < 12; i++) {
        await page.keyboard.press('Tab');
        const id = await page.evaluate(() => (globalThis as any).document.activeElement?.id ?? '');
        if (id && !order.includes(id)) order.push(id);
      }
      expect(order.filter((id) => ['mic', 'file', 'commit', 'close'].includes(id))).toEqual(['mic', 'file', 'commit', 'close']);
      await page.focus('#commit');
      const outline = await page.evaluate(() => {
        const st = (globalThis as any).getComputedStyle((globalThis as any).document.activeElement);
        return { style: st.outlineStyle, width: parseFloat(st.outlineWidth) };
      });
      expect(outline.style).not.toBe('none');
      expect(outline.width).toBeGreaterThanOrEqual(2);
      await page.keyboard.press('Enter');
      await page.waitForFunction(() => /committed seg_0/.test((globalThis as any).document.getElementById('events').textContent), null, {
        timeout: 30_000,
      });
      await page.focus('#close');
      await page.keyboard.press('Enter');
      await page.waitForSelector('#connection[data-state="closed"]', { timeout: 30_000 });
      expect(await page.isVisible('#history')).toBe(true);
      expect(await axeViolations(page)).toEqual([]);

      // Opened without a ticket (a reload): the ticket form, reachable and labelled.
      const bare = await context.newPage();
      await bare.goto(`${svc.baseUrl}/console/#session=rts_00000000000000000000000000`);
      await bare.waitForSelector('#ticket-panel:not([hidden])');
      expect(await axeViolations(bare)).toEqual([]);
    } finally {
      await context.close();
    }
  }, 60_000);

  it('fits a 400 px wide viewport: no sideways scrolling, every control on screen', async () => {
    const page = await browser.newPage({ viewport: { width: 400, height: 800 } });
    try {
      await page.goto(`${backend.url}/console?encoding=pcm_s16le_16000`);
      await page.waitForSelector('#connection[data-state="open"]');
      await page.setInputFiles('#file', clip('librivox-0880').wavFile);
      await sourceIs(page, 'Listen only');
      await page.click('#commit');
      await page.waitForSelector('#finals li:not([hidden])', { timeout: 30_000 });
      const layout = await page.evaluate(() => {
        const d = (globalThis as any).document;
        const boxes = [...d.querySelectorAll('button, input, #finals li, dd, h1')]
          .filter((e: any) => e.offsetParent !== null)
          .map((e: any) => ({ id: e.id || e.tagName, left: e.getBoundingClientRect().left, right: e.getBoundingClientRect().right }));
        return { scrollWidth: d.documentElement.scrollWidth, boxes };
      });
      expect(layout.scrollWidth).toBeLessThanOrEqual(400);
      for (const b of layout.boxes) {
        expect(b.left, b.id).toBeGreaterThanOrEqual(0);
        expect(b.right, b.id).toBeLessThanOrEqual(400);
      }
      expect(layout.boxes.map((b) => b.id)).toEqual(expect.arrayContaining(['mic', 'file', 'commit', 'close', 'LI']));
    } finally {
      await page.close();
    }
  }, 60_000);
});
