// The desk (docs/desk.md) in a real browser: Debian's chromium driven by playwright-core, a real
// scribed service, the real recognizer and real speech. A login link becomes the page's session
// (httpOnly cookie, link spent); search finds a phrase the recognizer heard; the call reads as
// one transcript with speakers and times; its recording (a call made with recordAudio, served
// as FLAC by the recordings route to the desk cookie) plays from a clicked word; a live rule
// matched by a live session's speech shows its alert on the desk's watch; logout ends it;
// axe-core finds nothing.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { startService, type TestService } from '../helpers/service.js';
import { chunks, loadClips, pcmSamples } from '../helpers/audio.js';
import { concat, createSession, streamAndClose } from '../helpers/live.js';
import { StreamClient, type StreamEvent } from '../helpers/stream-client.js';
import type { ProvisionedAccount } from '../../src/accounts/provision.js';
import { issueLoginLink } from '../../src/desk/login-link.js';
import { launchChromium } from '../console/browser.js';
import { axeViolations } from '../helpers/axe.js';

const STT = '/sound_clone/api/v1/stt';
const clips = loadClips();
// "he was not an ill disposed young man" (2.99 s) and "he might even have been made amiable himself" (3.29 s).
const agentClip = clips.find((c) => c.id === 'librivox-0880')!;
const customerClip = clips.find((c) => c.id === 'librivox-0930')!;
const CUSTOMER_DELAY_S = 3.2; // the customer answers after the agent: silence on its leg first

let svc: TestService;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let alice: ProvisionedAccount;
const ids = { heard: '', billing: '', live: '', liveStreamUrl: '', liveCall: '' };
interface Segment {
  speaker: string;
  startMs: number;
  endMs: number;
  text: string;
  words: Array<{ word: string; startMs: number; endMs: number }>;
}
/** A line's time as the desk shows it: when its words were said (a segment's end includes the
 * silence after them). */
const spoken = (s: Segment) => (s.words.length > 0 ? { startMs: s.words[0]!.startMs, endMs: s.words.at(-1)!.endMs } : s);
/** The recorded call's merged transcript as the API gives it (what the recognizer heard). */
let heard: Segment[] = [];
/** A word only the customer said, and two consecutive words of the customer's first line. */
const query = { word: '', phrase: '', line: null as Segment | null };

async function api(method: 'GET' | 'POST', p: string, body?: unknown) {
  const res = await fetch(`${svc.baseUrl}${STT}${p}`, {
    method,
    headers: {
      accessKey: alice.accessKey,
      ...(body === undefined ? {} : { 'content-type': 'application/json', 'Idempotency-Key': `desk-${randomUUID()}` }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const json = (await res.json()) as any;
  if (json.code !== 1) throw new Error(`${p}: ${res.status} ${JSON.stringify(json)}`);
  return json.data;
}

/** `m:ss.s`, as the desk writes times. */
function clock(ms: number): string {
  const tenths = Math.floor(ms / 100);
  const s = Math.floor(tenths / 10);
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}.${tenths % 10}`;
}

/** A call whose legs are real-time sessions with recordAudio, each streamed real speech and
 * closed; resolves once the call's stereo recording is served. */
async function recordedCall(title: string, externalId: string, legs: Array<[speaker: string, samples: Int16Array]>): Promise<string> {
  const call = await api('POST', '/calls', { title, externalId });
  for (const [speaker, samples] of legs) {
    const leg = await createSession(
      svc,
      alice.accessKey,
      { inputEncoding: 'pcm_s16le_16000', recordAudio: true },
      { title: `${title}: ${speaker}`, callId: call.callId, speaker },
    );
    await streamAndClose(svc, alice.accessKey, leg.streamUrl, samples);
  }
  // The recording is stored as each leg closes: until both are, the download is 409.
  for (let i = 0; i < 100; i++) {
    const res = await fetch(`${svc.baseUrl}${STT}/calls/${call.callId}/audio?leg=stereo`, {
      method: 'HEAD',
      headers: { accessKey: alice.accessKey },
    });
    if (res.status === 200) return call.callId;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${title}: no recording`);
}

/** A call whose leg has ended with one final of known words and no recording. */
async function unrecordedCall(
  title: string,
  externalId: string,
  speaker: string,
  fromS: number,
  toS: number,
  text: string,
): Promise<string> {
  const call = await api('POST', '/calls', { title, externalId });
  const leg = await api('POST', '/realtime/sessions', { title: `${title}: ${speaker}`, callId: call.callId, speaker });
  await api('POST', `/realtime/sessions/${leg.sessionId}/close`, {});
  const rate = (await svc.service.store.getTranscription(leg.transcriptionId, alice.accountId))!.sampleRateHz;
  const words = text.split(' ');
  const step = (toS - fromS) / words.length;
  const at = (s: number) => String(Math.round(s * rate));
  await svc.service.store.appendSegment({
    transcriptionId: leg.transcriptionId,
    index: 0,
    startSample: BigInt(at(fromS)),
    endSample: BigInt(at(toS)),
    text,
    words: words.map((word, i) => ({ word, startSample: at(fromS + i * step), endSample: at(fromS + (i + 1) * step), confidence: 0.9 })),
    createdAt: new Date().toISOString(),
  });
  return call.callId;
}

const wordsOf = (text: string) =>
  text
    .toLowerCase()
    .split(/[^a-z']+/)
    .filter(Boolean);

beforeAll(async () => {
  svc = await startService({ maxDecoders: 1, maxStreamsPerAccount: 0 });
  alice = await svc.account(100_000n);
  const silence = new Int16Array(Math.round(CUSTOMER_DELAY_S * 16000));
  ids.heard = await recordedCall('Cancellation call', 'CA-desk-1', [
    ['agent', pcmSamples(agentClip)],
    ['customer', concat([silence, pcmSamples(customerClip)])],
  ]);
  const transcript = await fetch(`${svc.baseUrl}${STT}/calls/${ids.heard}/transcript?format=json`, {
    headers: { accessKey: alice.accessKey },
  });
  heard = ((await transcript.json()) as { segments: Segment[] }).segments.filter((s) => s.text.trim() !== '');
  const agentWords = new Set(heard.filter((s) => s.speaker === 'agent').flatMap((s) => wordsOf(s.text)));
  query.line = heard.find((s) => s.speaker === 'customer' && s.words.length >= 2) ?? null;
  if (!query.line || !heard.some((s) => s.speaker === 'agent'))
    throw new Error(`the recognizer heard too little: ${JSON.stringify(heard)}`);
  query.word = [...wordsOf(query.line.text)].filter((w) => !agentWords.has(w)).sort((a, b) => b.length - a.length)[0] ?? '';
  query.phrase = query.line.words
    .slice(0, 2)
    .map((w) => w.word)
    .join(' ');
  ids.billing = await unrecordedCall('Billing call', 'CA-desk-2', 'customer', 0.5, 2.0, `please ${query.word} the invoice`);
  ids.liveCall = (await api('POST', '/calls', { title: 'Live support line' })).callId;
  const live = await createSession(
    svc,
    alice.accessKey,
    { inputEncoding: 'pcm_s16le_16000' },
    { title: 'Live support line: customer', callId: ids.liveCall, speaker: 'customer' },
  );
  ids.live = live.sessionId;
  ids.liveStreamUrl = live.streamUrl;
  // Whatever word the live session's customer says first (a phrase would hang on what the recognizer hears).
  await api('POST', '/rules', { name: 'Anything said', pattern: '\\w+' });
  browser = await launchChromium();
  // bypassCSP only so that axe-core can be added to the page; the page's own code is unchanged.
  context = await browser.newContext({ bypassCSP: true, viewport: { width: 1000, height: 900 } });
  page = await context.newPage();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await svc?.stop();
});

const text = (sel: string) => page.$eval(sel, (e) => (e.textContent ?? '').trim());
const lines = () => page.$$eval('#transcript li', (els) => els.map((e) => (e.textContent ?? '').replace(/\s+/g, ' ').trim()));
// Functions given to page.evaluate/waitForFunction run in the page (serialized by Playwright);
// the tests are type-checked without the DOM library, hence `globalThis as any` there.

describe('the desk in Chromium', () => {
  it('a login link signs the browser in once: httpOnly SameSite=Strict cookie, token out of the address bar', async () => {
    const link = await issueLoginLink(svc.service.store, alice.accountId, svc.baseUrl, 15 * 60_000, new Date());
    await page.goto(link.url);
    await page.waitForURL(`${svc.baseUrl}/desk/`);
    await page.waitForFunction(() => (globalThis as any).document.getElementById('who')?.textContent.startsWith('Signed in to test'));
    expect(await text('#who')).toContain(alice.accountId);
    const cookies = await context.cookies(svc.baseUrl);
    expect(cookies.map((c) => [c.name, c.httpOnly, c.sameSite, c.path])).toEqual([['scribed_desk', true, 'Strict', '/']]);
    expect(await page.evaluate(() => (globalThis as any).document.cookie)).toBe(''); // the page's scripts never see it
    // The link is spent: opened again (another tab), it says so and signs nothing in.
    const again = await context.newPage();
    await again.goto(link.url);
    await again.waitForFunction(() => /not valid/.test((globalThis as any).document.getElementById('login-state').textContent));
    expect(again.url()).toBe(`${svc.baseUrl}/desk/login`); // the fragment left the address bar at once
    expect(await axeViolations(again, ['color-contrast', 'document-title', 'link-name'])).toEqual([]);
    await again.close();
  });

  it('search finds the phrase; the call reads with speakers and times; a word plays the recording from it', async () => {
    const line = query.line!;
    await page.fill('#q', query.word);
    await page.click('#search-form button[type=submit]');
    await page.waitForFunction(() => (globalThis as any).document.querySelectorAll('#results .hits li').length === 2);
    // One group a call, headed by its title, PBX id, parties and duration (not raw ids).
    await page.waitForFunction(() => (globalThis as any).document.querySelectorAll('#results > li .group-title').length === 2);
    await page.waitForFunction(() =>
      [...(globalThis as any).document.querySelectorAll('#results .group-title')].every((e: any) => !e.textContent.startsWith('call_')),
    );
    expect((await page.$$eval('#results .group-title', (els) => els.map((e) => e.textContent))).sort()).toEqual([
      'Billing call',
      'Cancellation call',
    ]);
    // Hits of one call, from both its parties, are one group.
    const agentWord = wordsOf(heard.find((s) => s.speaker === 'agent')!.text).sort((a, b) => b.length - a.length)[0]!;
    await page.fill('#q', `${query.word} OR ${agentWord}`);
    await page.click('#search-form button[type=submit]');
    await page.waitForFunction(() =>
      /^3 results in 2 calls or transcripts\.$/.test((globalThis as any).document.getElementById('search-state').textContent),
    );
    const perGroup = await page.$$eval('#results > li', (els) =>
      els.map((e) => [e.querySelector('.group-title')!.getAttribute('href'), e.querySelectorAll('.hits li').length]),
    );
    expect(perGroup).toContainEqual([`#call=${ids.heard}`, 2]);
    await page.fill('#q', `"${query.phrase}"`);
    await page.fill('#f-speaker', 'customer');
    await page.click('#search-form button[type=submit]');
    await page.waitForFunction(
      () => (globalThis as any).document.getElementById('search-state').textContent === '1 result in 1 call or transcript.',
    );
    expect(await page.$$eval('#results li mark', (els) => els.map((e) => (e.textContent ?? '').toLowerCase()))).toEqual([
      query.phrase.toLowerCase(),
    ]);
    await page.waitForFunction(() => (globalThis as any).document.querySelector('#results > li > .meta').textContent.startsWith('PBX'));
    const call = await api('GET', `/calls/${ids.heard}`);
    expect(call.durationMs).toBe(Math.round((CUSTOMER_DELAY_S + customerClip.durationSec) * 1000));
    expect(await text('#results > li > .meta')).toMatch(
      new RegExp(`^PBX CA-desk-1 · agent, customer · ${clock(call.durationMs).replace('.', '\\.')} long · `),
    );
    expect(await text('#results .hits li .meta')).toBe(`customer · at ${clock(line.startMs)}`);

    // The page's own request for the recording, answered by the recordings route to the cookie.
    const recording = page.waitForResponse((r) => r.url().includes(`${STT}/calls/${ids.heard}/audio?leg=stereo`));
    await page.click('#results .hits a');
    await page.waitForFunction((n) => (globalThis as any).document.querySelectorAll('#transcript li').length === n, heard.length);
    expect(await text('#reader-heading')).toBe('Call: Cancellation call');
    // The reader is a view of its own: the results wait behind it.
    expect(await page.isVisible('#search-panel')).toBe(false);
    expect(await page.isVisible('#back')).toBe(true);
    expect(await lines()).toEqual(
      heard.map((s) => `${clock(spoken(s).startMs)}-${clock(spoken(s).endMs)} ${s.speaker}: ${s.text}`.replace(/\s+/g, ' ')),
    );
    // The agent's line ends when the agent stopped speaking, before the customer's begins.
    const agentLine = heard.find((s) => s.speaker === 'agent' && s.words.length > 0)!;
    expect(spoken(agentLine).endMs).toBeLessThan(agentLine.endMs);
    expect(await page.$eval('#transcript li.hit', (e) => e.textContent)).toContain(line.text);

    // The recording (stereo: the call has two legs), then a click on the customer's second word.
    const served = await recording;
    expect([200, 206]).toContain(served.status());
    expect(served.headers()['content-type']).toBe('audio/flac');
    // Audited as the desk session's download (docs/redaction.md, "Audit trail").
    const cookie = (await context.cookies(svc.baseUrl)).find((c) => c.name === 'scribed_desk')!.value;
    const audit = await svc.service.store.listAudit(alice.accountId, 100);
    expect(audit.filter((e) => e.action === 'call.recording.download' && e.subjectId === ids.heard).map((e) => e.credentialId)).toContain(
      `ds_${cookie.split('_')[1]}`,
    );
    await page.waitForFunction(() => {
      const p = (globalThis as any).document.getElementById('player');
      return !p.hidden && p.readyState >= 1;
    });
    const duration = await page.evaluate(() => (globalThis as any).document.getElementById('player').duration as number);
    expect(Math.abs(duration - (CUSTOMER_DELAY_S + customerClip.durationSec))).toBeLessThan(0.2); // the longer leg
    const word = page.locator('#transcript li.hit .word').nth(1);
    const startMs = Number(await word.getAttribute('data-start-ms'));
    expect(startMs).toBe(line.words[1]!.startMs);
    expect(startMs).toBeGreaterThan(CUSTOMER_DELAY_S * 1000);
    await word.click();
    const at = await page.evaluate(() => (globalThis as any).document.getElementById('player').currentTime * 1000);
    expect(Math.abs(at - startMs)).toBeLessThan(50);
    // Playing from there: time moves on.
    await page.waitForFunction((ms) => (globalThis as any).document.getElementById('player').currentTime * 1000 > ms + 100, startMs, {
      timeout: 5000,
    });
    // A line's time plays from the line's start: the keyboard's way in (Tab, a visible focus, Enter).
    const first = heard[0]!;
    await page.focus('#transcript li:first-child .seek');
    await page.keyboard.press('Shift+Tab');
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => (globalThis as any).document.activeElement.getAttribute('aria-label'))).toBe(
      `${clock(spoken(first).startMs)}-${clock(spoken(first).endMs)}, play from here`,
    );
    expect(await page.evaluate(() => (globalThis as any).getComputedStyle((globalThis as any).document.activeElement).outlineStyle)).toBe(
      'solid',
    );
    await page.keyboard.press('Enter');
    expect(
      Math.abs(
        (await page.evaluate(() => (globalThis as any).document.getElementById('player').currentTime)) - spoken(first).startMs / 1000,
      ),
    ).toBeLessThan(0.05);
    expect(await axeViolations(page, ['color-contrast', 'button-name', 'link-name'])).toEqual([]);

    // Back: the results as they were, the reader gone.
    await page.click('#back');
    await page.waitForFunction(() => !(globalThis as any).document.getElementById('search-panel').hidden);
    expect(await page.isVisible('#reader')).toBe(false);
    expect(await text('#search-state')).toBe('1 result in 1 call or transcript.');
    expect(await axeViolations(page)).toEqual([]);

    // A call with no recording says so.
    await page.evaluate((id) => ((globalThis as any).location.hash = `#call=${id}`), ids.billing);
    await page.waitForFunction(() => !(globalThis as any).document.getElementById('no-recording').hidden);
    expect(await lines()).toEqual([`0:00.5-0:02.0 customer: please ${query.word} the invoice`]);
    expect(await page.$eval('#player', (e) => (e as any).hidden)).toBe(true);
  });

  it("dates are written in the browser's locale", async () => {
    const german = await browser.newContext({ locale: 'de-DE', timezoneId: 'UTC' });
    try {
      const p = await german.newPage();
      const link = await issueLoginLink(svc.service.store, alice.accountId, svc.baseUrl, 15 * 60_000, new Date());
      await p.goto(link.url);
      await p.waitForURL(`${svc.baseUrl}/desk/`);
      await p.waitForFunction(() => (globalThis as any).document.getElementById('who')?.textContent.startsWith('Signed in to test'));
      const session = (await p.evaluate(() => fetch('/desk/api/session').then((r) => r.json()))) as { data: { expiresAt: string } };
      const expected = new Intl.DateTimeFormat('de-DE', { dateStyle: 'medium', timeStyle: 'short', timeZone: 'UTC' }).format(
        new Date(session.data.expiresAt),
      );
      expect(expected).toMatch(/^\d{2}\.\d{2}\.\d{4}, \d{2}:\d{2}$/);
      expect(await p.$eval('#who', (e) => e.textContent)).toContain(`read-only, until ${expected}`);
    } finally {
      await german.close();
    }
  });

  it('watches a live session and shows its alert as it arrives; axe finds nothing; logout ends the session', async () => {
    // From the reader the previous test left open, back to the desk's panels.
    await page.evaluate(() => ((globalThis as any).location.hash = ''));
    await page.waitForFunction(() => !(globalThis as any).document.getElementById('live-panel').hidden);
    // The live list shows sessions a client streams to, and only those: the live leg, created
    // and not streamed to yet, is not listed (nor are the ended calls' legs).
    await page.click('#live-refresh');
    await page.waitForFunction(() => (globalThis as any).document.getElementById('live-state').textContent === 'No live sessions.');
    expect(await page.locator('#live-list li').count()).toBe(0);
    // The customer's client connects: now it is live.
    const client = await StreamClient.connect(`${svc.wsBase}${ids.liveStreamUrl}`, { accessKey: alice.accessKey });
    try {
      await client.next('ready');
      await page.click('#live-refresh');
      const watchButton = page.locator(`#live-list button[data-session-id="${ids.live}"]`);
      await watchButton.waitFor();
      expect(await page.locator('#live-list li').count()).toBe(1);
      await watchButton.click();
      await page.waitForFunction(() =>
        (globalThis as any).document.getElementById('watch-state').textContent.startsWith('Live: a client is streaming'),
      );
      // The customer speaks on the live leg; the account's rule matches the final's words.
      let offset = 0;
      for (const f of chunks(customerClip.pcm16k, 2, 320)) {
        client.audio(1, offset, f);
        offset += f.length / 2;
      }
      await client.next('ack', (e) => e.sampleOffset === offset, 60_000);
      client.control({ type: 'commit' });
      await client.next('alert', () => true, 60_000);
      const alerts = () =>
        client.ofType('alert') as Array<StreamEvent & { ruleName: string; speaker: string; match: { text: string }; startMs: number }>;
      const said = (a: ReturnType<typeof alerts>[number]) =>
        `Alert: ${a.ruleName} (${a.speaker}): "${a.match.text}" at ${clock(a.startMs)}`;
      expect(alerts()[0]).toMatchObject({
        ruleName: 'Anything said',
        condition: 'pattern',
        final: true,
        speaker: 'customer',
        callId: ids.liveCall,
      });
      expect(wordsOf(alerts()[0]!.text as string)).toContain(alerts()[0]!.match.text.toLowerCase());
      await page.waitForFunction((n) => (globalThis as any).document.querySelectorAll('#alerts li').length === n, alerts().length);
      expect(await page.$eval('#alert-banner', (e) => (e as any).hidden)).toBe(false);
      expect(await text('#alert-banner')).toBe(said(alerts().at(-1)!));
      expect(await page.$$eval('#alerts li', (els) => els.map((e) => e.textContent))).toEqual(alerts().map(said));
    } finally {
      client.close();
    }
    expect(await page.$eval('#alert-banner', (e) => e.getAttribute('role'))).toBe('alert');
    expect(await axeViolations(page)).toEqual([]);
    // Nothing scrolls sideways at 400 px.
    await page.setViewportSize({ width: 400, height: 800 });
    expect(await page.evaluate(() => (globalThis as any).document.documentElement.scrollWidth)).toBeLessThanOrEqual(400);

    await page.click('#logout');
    await page.waitForFunction(() => !(globalThis as any).document.getElementById('signed-out').hidden);
    expect(await text('#signed-out-why')).toBe('You have logged out.');
    const cookie = (await context.cookies(svc.baseUrl)).map((c) => `${c.name}=${c.value}`).join('; ');
    expect((await fetch(`${svc.baseUrl}${STT}/search?q=${query.word}`, { headers: { cookie } })).status).toBe(401);
    await page.reload();
    await page.waitForFunction(() => (globalThis as any).document.getElementById('who').textContent === 'Not signed in');
    // Signed out, the page shows sign-in and nothing else: no search form, no live panel.
    expect(await page.isVisible('#signed-out')).toBe(true);
    for (const hidden of ['#search-form', '#live-panel', '#desk-nav', '#reader']) expect(await page.isVisible(hidden), hidden).toBe(false);
    expect(await axeViolations(page, ['color-contrast'])).toEqual([]);
  });
});
