// The console's call view (docs/console.md, "The call view") in a real browser: Debian's
// chromium driven by playwright-core, a real scribed service, a call of two legs each fed a
// different real speech clip by the test over its own stream socket (as a PBX gateway would),
// and the example backend of docs/console.md (extracted from the doc) reading the call with the
// key, issuing one watch ticket per leg, renewing a leg's ticket and serving the call's merged
// transcript.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { startService, type TestService } from '../helpers/service.js';
import { loadClips, devSetDir } from '../helpers/audio.js';
import { StreamClient } from '../helpers/stream-client.js';
import { expectTurnsHeardOnTheirLegs } from '../helpers/turns.js';
import { launchChromium, startBackend, type Backend } from './browser.js';
import { axeViolations } from '../helpers/axe.js';

const STT = '/sound_clone/api/v1/stt';
const RATE = 16000;

const clips = loadClips(devSetDir());
const clip = (id: string) => clips.find((c) => c.id === id)!;

let svc: TestService;
let accessKey: string;
let backend: Backend;
let browser: Browser;

beforeAll(async () => {
  // Both legs stream at once from one account (docs/calls.md: no per-account bound here).
  svc = await startService({ maxStreamsPerAccount: 0 });
  accessKey = (await svc.account(100_000n)).accessKey;
  backend = await startBackend(svc.baseUrl, accessKey);
  browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  backend?.stop();
  await svc?.stop();
});

async function api(method: string, route: string, body?: unknown): Promise<any> {
  const res = await fetch(`${svc.baseUrl}${STT}${route}`, {
    method,
    headers: { accessKey, 'Idempotency-Key': `call-view-${randomUUID()}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const json = (await res.json()) as { code: number; message: string; data: any };
  expect(json.code, json.message).toBe(1);
  return json.data;
}

interface Leg {
  speaker: string;
  sessionId: string;
  transcriptionId: string;
  streamUrl: string;
}

/** A call and its legs, created through the API as a PBX integration would (docs/calls.md). */
async function createCall(speakers: string[]): Promise<{ callId: string; legs: Leg[] }> {
  const call = await api('POST', '/calls', { title: 'Call view test' });
  const legs: Leg[] = [];
  for (const speaker of speakers) {
    // Manual segments: the test commits, so which final comes first does not hang on timing.
    const options = { inputEncoding: 'pcm_s16le_16000' };
    legs.push(await api('POST', '/realtime/sessions', { title: speaker, options, callId: call.callId, speaker }));
  }
  return { callId: call.callId, legs };
}

const silence = (seconds: number) => Buffer.alloc(Math.round(seconds * RATE) * 2);
/** PCM parts end to end, padded with silence to `seconds`. */
function audio(parts: Buffer[], seconds: number): Buffer {
  const joined = Buffer.concat(parts);
  return Buffer.concat([joined, silence(seconds - joined.length / 2 / RATE)]);
}

/** Stream 16 kHz PCM over a leg's stream socket from session sample `from`, paced in real
 * time (100 ms frames) as a PBX gateway would; resolves with the end offset on its ack. */
async function feed(client: StreamClient, pcm: Buffer, from = 0): Promise<number> {
  const step = 1600;
  const t0 = Date.now();
  let offset = from;
  for (let at = 0; at < pcm.length / 2; at += step) {
    const frame = pcm.subarray(at * 2, Math.min(pcm.length, (at + step) * 2));
    client.audio(1, offset, frame);
    offset += frame.length / 2;
    await new Promise((r) => setTimeout(r, Math.max(0, t0 + ((at + step) / RATE) * 1000 - Date.now())));
  }
  await client.next('ack', (e) => e.sampleOffset === offset, 30_000);
  return offset;
}

interface Line {
  speaker: string;
  startMs: number;
  text: string;
}

/** The finals the page shows, top to bottom. */
const pageLines = (page: Page): Promise<Line[]> =>
  page.$$eval('#timeline li:not([hidden]):not(.partial)', (els) =>
    els.map((e: any) => ({
      speaker: e.dataset.speaker,
      startMs: Number(e.dataset.startMs),
      text: e.querySelector('.text').textContent,
      label: e.querySelector('.speaker').textContent,
    })),
  ) as Promise<Line[]>;

const legState = (page: Page, i: number) => page.getAttribute(`#leg-${i}-state`, 'data-state');

/** At this width nothing scrolls sideways and every visible control and line is on screen. */
async function fitsWidth(page: Page, width: number): Promise<void> {
  const layout = await page.evaluate(() => {
    const d = (globalThis as any).document;
    const boxes = [...d.querySelectorAll('button, input, #timeline li, .leg, dd, h1, a')]
      .filter((e: any) => e.offsetParent !== null)
      .map((e: any) => ({
        id: e.id || `${e.tagName}.${e.className}`,
        left: e.getBoundingClientRect().left,
        right: e.getBoundingClientRect().right,
      }));
    return { scrollWidth: d.documentElement.scrollWidth, boxes };
  });
  expect(layout.scrollWidth).toBeLessThanOrEqual(width);
  for (const b of layout.boxes) {
    expect(b.left, b.id).toBeGreaterThanOrEqual(0);
    expect(b.right, b.id).toBeLessThanOrEqual(width);
  }
}

describe('the call view', () => {
  it("two legs fed real speech: both speakers' finals, labelled and in time order, equal to the merged transcript; History through the backend; axe and 400 px", async () => {
    const [a, b, c] = ['librivox-0890', 'librivox-0880', 'librivox-0930'].map(clip) as [
      ReturnType<typeof clip>,
      ReturnType<typeof clip>,
      ReturnType<typeof clip>,
    ];
    // The agent speaks (0-5.3 s) and the customer talks over it (1-4 s); the customer's segment
    // is committed first, so its final comes first but belongs after the agent's on the time
    // line. Then the agent again, and both legs close.
    const first = a.durationSec + 0.5;
    const agentAudio = audio([a.pcm16k], first);
    const customerAudio = audio([silence(1), b.pcm16k], first);
    const second = c.durationSec + 1.5;
    const agentAgain = audio([silence(0.5), c.pcm16k], second);
    const customerQuiet = silence(second);

    const { callId, legs } = await createCall(['agent', 'customer']);
    // The "PBX": the test's own stream socket per leg, attached before the page watches.
    const pbx = await Promise.all(legs.map(async (l) => StreamClient.connect(`${svc.wsBase}${l.streamUrl}`, { accessKey })));
    await Promise.all(pbx.map((p) => p.next('ready')));

    // bypassCSP only so that axe-core can be added to the page; the page's code is unchanged.
    const context = await browser.newContext({ bypassCSP: true, viewport: { width: 400, height: 900 } });
    try {
      const page = await context.newPage();
      await page.goto(`${backend.url}/console/call?call=${callId}`);
      await page.waitForSelector('#connection[data-state="open"]');
      // One watch socket per leg, each with its ticket, and the tickets out of the address.
      expect(page.url()).toContain(
        `/console/call.html#call=${callId}&legs=agent%3A${legs[0]!.sessionId}%2Ccustomer%3A${legs[1]!.sessionId}&`,
      );
      expect(page.url()).not.toMatch(/tkt_/);
      expect(await page.textContent('#connection')).toBe('Watching 2 of 2 legs');
      expect([await legState(page, 0), await legState(page, 1)]).toEqual(['open', 'open']);
      expect(await page.textContent('#leg-0-state')).toBe('Live (epoch 1)');

      // The partial lines each speaker's lines went through, and the order finals arrived in
      // (a MutationObserver the test installs; the page keeps no such list).
      await page.evaluate(() => {
        const w = globalThis as any;
        w.partials = [];
        w.arrivals = [];
        new w.MutationObserver((records: any[]) => {
          for (const li of w.document.querySelectorAll('#timeline li.partial'))
            w.partials.push(`${li.dataset.speaker}: ${li.querySelector('.text').textContent}`);
          for (const r of records)
            for (const n of r.addedNodes)
              if (n.tagName === 'LI' && !n.classList.contains('partial') && !n.hidden) w.arrivals.push(n.dataset.speaker);
        }).observe(w.document.getElementById('timeline'), { childList: true, characterData: true, subtree: true });
      });

      const fed = Promise.all([feed(pbx[0]!, agentAudio), feed(pbx[1]!, customerAudio)]);
      // Mid-call, both speakers' partial lines on screen at once, the agent's first.
      await page.waitForSelector('#timeline li.partial[data-speaker="agent"] + li.partial[data-speaker="customer"]', { timeout: 30_000 });
      expect(await axeViolations(page, ['color-contrast'])).toEqual([]);
      const [agentAt, customerAt] = await fed;
      pbx[1]!.control({ type: 'commit' });
      await pbx[1]!.next('committed', () => true, 30_000);
      await page.waitForSelector('#timeline li[data-speaker="customer"]:not(.partial)', { timeout: 30_000 });
      pbx[0]!.control({ type: 'commit' });
      await pbx[0]!.next('committed', () => true, 30_000);
      await Promise.all([feed(pbx[0]!, agentAgain, agentAt), feed(pbx[1]!, customerQuiet, customerAt)]);
      for (const p of pbx) p.control({ type: 'close' });
      await Promise.all(pbx.map((p) => p.next('closed', () => true, 60_000)));
      await page.waitForSelector('#connection[data-state="closed"]', { timeout: 30_000 });
      expect(await page.textContent('#connection')).toBe('Call ended (2 legs closed)');

      const lines = await pageLines(page);
      process.stderr.write(
        `call view lines: ${JSON.stringify(lines)}\narrivals: ${JSON.stringify(await page.evaluate(() => (globalThis as any).arrivals))}\n`,
      );
      // Each line names its speaker, in the leg's own colour, distinct between the legs.
      for (const l of lines as Array<Line & { label: string }>) expect(l.label).toBe(l.speaker);
      const colours = await page.$$eval('#timeline li:not([hidden]) .speaker', (els) => [
        ...new Set(els.map((e) => (globalThis as any).getComputedStyle(e).color)),
      ]);
      expect(colours).toHaveLength(2);
      // The customer's final arrived before the agent's first, yet the page shows the lines in
      // time order, the turns as spoken.
      expect(await page.evaluate(() => (globalThis as any).arrivals)).toEqual(['customer', 'agent', 'agent']);
      for (let i = 1; i < lines.length; i++) expect(lines[i]!.startMs).toBeGreaterThanOrEqual(lines[i - 1]!.startMs);
      expect(lines.map((l) => l.speaker).filter((s, i, all) => i === 0 || all[i - 1] !== s)).toEqual(['agent', 'customer', 'agent']);
      // The same lines as the call's merged transcript: speaker, start and text.
      const res = await fetch(`${svc.baseUrl}${STT}/calls/${callId}/transcript?format=json`, { headers: { accessKey } });
      const merged = (await res.json()) as { segments: Array<{ speaker: string; startMs: number; text: string }> };
      const spoken = merged.segments
        .filter((s) => s.text.trim() !== '')
        .map((s) => ({ speaker: s.speaker, startMs: s.startMs, text: s.text }));
      expect(lines.map(({ speaker, startMs, text }) => ({ speaker, startMs, text }))).toEqual(spoken);
      // And what each PBX socket got, and real speech heard on the right leg.
      for (const [i, speaker] of ['agent', 'customer'].entries()) {
        const own = pbx[i]!.ofType('final')
          .map((e) => e.text as string)
          .filter((t) => t.trim() !== '');
        expect(lines.filter((l) => l.speaker === speaker).map((l) => l.text)).toEqual(own);
      }
      const said = (speaker: string) => lines.filter((l) => l.speaker === speaker).map((l) => l.text);
      expectTurnsHeardOnTheirLegs([
        [a.reference, said('agent')[0]!],
        [b.reference, said('customer').join(' ')],
        [c.reference, said('agent').slice(1).join(' ')],
      ]);
      // Partials of both speakers were shown before their finals.
      const partials = (await page.evaluate(() => (globalThis as any).partials)) as string[];
      // Growing partials of both speakers before their finals (the customer's 3 s clip gives
      // fewer on a loaded machine, where the recognizer takes bigger batches).
      expect(new Set(partials.filter((p) => p.startsWith('agent: '))).size).toBeGreaterThanOrEqual(3);
      expect(new Set(partials.filter((p) => p.startsWith('customer: '))).size).toBeGreaterThanOrEqual(2);
      expect(await page.$$('#timeline li.partial')).toHaveLength(0);

      // History: the merged transcript through the backend, no key in the page.
      const txtHref = await page.getAttribute('#history-links a[data-format="txt"]', 'href');
      expect(txtHref).toBe(`${backend.url}/calls/${callId}/transcript?format=txt`);
      const viaBackend = (await (await fetch(txtHref!)).text()).trim().split('\n');
      expect(viaBackend).toEqual(
        lines.map((l) =>
          expect.stringMatching(
            new RegExp(`^\\[\\d\\d:\\d\\d:\\d\\d\\.\\d{3}\\] ${l.speaker}: ${l.text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`),
          ),
        ),
      );
      const jsonHref = await page.getAttribute('#history-links a[data-format="json"]', 'href');
      expect(((await (await fetch(jsonHref!)).json()) as typeof merged).segments).toEqual(merged.segments);

      expect(await axeViolations(page, ['color-contrast'])).toEqual([]);
      await fitsWidth(page, 400);
    } finally {
      await context.close();
      for (const p of pbx) p.terminate();
    }
  }, 90_000);

  it('a leg whose ticket is refused, and legs that drop, each ask for a fresh ticket through the renew window; the other leg is not disturbed', async () => {
    const { callId, legs } = await createCall(['agent', 'customer']);
    const ticket = async (l: Leg) => (await api('POST', `/realtime/sessions/${l.sessionId}/tickets`)).ticket as string;
    // The agent's ticket is spent before the page uses it (a replayed link).
    const spent = await ticket(legs[0]!);
    const other = await StreamClient.connect(`${svc.wsBase}${STT}/realtime/sessions/${legs[0]!.sessionId}/events?ticket=${spent}`);
    await other.next('watching');
    other.close();
    const fragment = new URLSearchParams({
      call: callId,
      legs: `agent:${legs[0]!.sessionId}:${spent},customer:${legs[1]!.sessionId}:${await ticket(legs[1]!)}`,
      renew: `${backend.url}/console/ticket`,
    });
    const context = await browser.newContext({ bypassCSP: true, viewport: { width: 400, height: 900 } });
    try {
      const page = await context.newPage();
      await page.goto(`${svc.baseUrl}/console/call.html#${fragment}`);
      await page.waitForSelector('#leg-0-state[data-state="refused"]');
      await page.waitForSelector('#leg-1-state[data-state="open"]');
      expect(await page.textContent('#connection')).toBe('1 of 2 legs need a ticket');
      expect(await page.isVisible('#leg-0-renew')).toBe(true);
      expect(await page.isVisible('#leg-1-renew')).toBe(false);
      expect(await page.textContent('#events')).toMatch(/refused agent's ticket.*already used/);
      expect(await axeViolations(page, ['color-contrast'])).toEqual([]);
      await fitsWidth(page, 400);

      // The agent's renew window: the backend creates a watch ticket (no resume) and posts it back.
      const renew = async (i: number) => {
        const popup = page.waitForEvent('popup');
        await page.click(`#leg-${i}-renew`);
        const win = await popup;
        expect(new URL(win.url()).searchParams.get('mode')).toBe('watch');
        expect(new URL(win.url()).searchParams.get('session')).toBe(legs[i]!.sessionId);
        // The window may be gone before a 'close' listener could be added: wait for the leg.
        await page.waitForSelector(`#leg-${i}-state[data-state="open"]`, { timeout: 30_000 });
        await expect.poll(() => win.isClosed()).toBe(true);
      };
      await renew(0);
      expect(await page.textContent('#connection')).toBe('Watching 2 of 2 legs');
      expect(await page.isVisible('#leg-0-renew')).toBe(false);

      // Both watch sockets drop (the server's end cut): each leg asks on its own; renewing the
      // customer brings the customer back while the agent still waits.
      for (const ws of svc.service.app.websocketServer.clients) ws.terminate();
      await page.waitForSelector('#leg-0-state[data-state="dropped"]');
      await page.waitForSelector('#leg-1-state[data-state="dropped"]');
      expect(await page.textContent('#connection')).toBe('2 of 2 legs need a ticket');
      await renew(1);
      expect(await legState(page, 0)).toBe('dropped');
      expect(await page.textContent('#connection')).toBe('1 of 2 legs need a ticket');
      expect(await page.textContent('#events')).toMatch(/customer: fresh ticket received from the application/);
    } finally {
      await context.close();
    }
  }, 60_000);
});
