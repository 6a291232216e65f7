// The desk (docs/desk.md) in a real browser: Debian's chromium driven by playwright-core, a real
// scribed service. A login link becomes the page's session (httpOnly cookie, link spent); search
// finds a phrase; the call reads as one transcript with speakers and times; clicking a word
// plays the recording from it; a live session's alert shows on the watch socket; logout ends
// it; axe-core finds nothing.
//
// Two stand-ins, each only in this test: the recordings downloads are built on another branch,
// so a proxy in front of the service answers their two paths with a fixture WAV after the
// service itself authorised the cookie (recordings-stub.ts); and live rules are built on
// another branch too, so the test emits an `alert` event on the watched session's own event
// fan-out (what a rule's match does) rather than configuring a rule.
import fs from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { startService, type TestService } from '../helpers/service.js';
import type { ProvisionedAccount } from '../../src/accounts/provision.js';
import { issueLoginLink } from '../../src/desk/login-link.js';
import { launchChromium } from '../console/browser.js';
import { startRecordingsStub, type RecordingsStub } from './recordings-stub.js';

const AXE = path.resolve(import.meta.dirname, '../../node_modules/axe-core/axe.min.js');
const WAV = path.resolve(import.meta.dirname, '../../samples/librivox-0880.wav'); // 2.99 s
const STT = '/sound_clone/api/v1/stt';

let svc: TestService;
let stub: RecordingsStub;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let alice: ProvisionedAccount;
const ids = { heard: '', billing: '', live: '', liveCall: '' };

async function apiPost(p: string, body: unknown) {
  const res = await fetch(`${svc.baseUrl}${STT}${p}`, {
    method: 'POST',
    headers: { accessKey: alice.accessKey, 'content-type': 'application/json', 'Idempotency-Key': `desk-${randomUUID()}` },
    body: JSON.stringify(body),
  });
  const json = (await res.json()) as any;
  if (json.code !== 1) throw new Error(`${p}: ${JSON.stringify(json)}`);
  return json.data;
}

/** A call whose legs have ended, each with one final of known words spread evenly over its span
 * (as a session writes them; the recognizer's words are not what this test is about). */
async function endedCall(title: string, externalId: string, lines: Array<[speaker: string, fromS: number, toS: number, text: string]>): Promise<string> {
  const call = await apiPost('/calls', { title, externalId });
  for (const [speaker, fromS, toS, text] of lines) {
    const leg = await apiPost('/realtime/sessions', { title: `${title}: ${speaker}`, callId: call.callId, speaker });
    await apiPost(`/realtime/sessions/${leg.sessionId}/close`, {});
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
  }
  return call.callId;
}

beforeAll(async () => {
  svc = await startService({ maxDecoders: 1, maxStreamsPerAccount: 0 });
  alice = await svc.account(100_000n);
  ids.heard = await endedCall('Cancellation call', 'CA-desk-1', [
    ['agent', 0.2, 1.2, 'thank you for calling'],
    ['customer', 1.3, 2.9, 'I want to cancel my subscription'],
  ]);
  ids.billing = await endedCall('Billing call', 'CA-desk-2', [['customer', 0.5, 2.0, 'please cancel the invoice']]);
  ids.liveCall = (await apiPost('/calls', { title: 'Live support line' })).callId;
  ids.live = (await apiPost('/realtime/sessions', { title: 'Live support line: customer', callId: ids.liveCall, speaker: 'customer' })).sessionId;
  stub = await startRecordingsStub(svc.baseUrl, new Map([[ids.heard, fs.readFileSync(WAV)]]));
  browser = await launchChromium();
  // bypassCSP only so that axe-core can be added to the page; the page's own code is unchanged.
  context = await browser.newContext({ bypassCSP: true, viewport: { width: 1000, height: 900 } });
  page = await context.newPage();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await stub?.close();
  await svc?.stop();
});

/** axe-core's WCAG 2 A/AA rules and best practices; `checked` must be among the rules that ran
 * and passed (so a page with no form does not claim its labels were checked). */
async function axeViolations(p: Page, checked = ['color-contrast', 'label', 'button-name']): Promise<string[]> {
  await p.addScriptTag({ path: AXE });
  const result = (await p.evaluate(() => (globalThis as any).axe.run((globalThis as any).document, { runOnly: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] }))) as {
    violations: Array<{ id: string; help: string; nodes: Array<{ target: string[] }> }>;
    passes: Array<{ id: string }>;
  };
  expect(result.passes.map((x) => x.id)).toEqual(expect.arrayContaining(checked));
  return result.violations.map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).join(', ')})`);
}

const text = (sel: string) => page.$eval(sel, (e) => (e.textContent ?? '').trim());
const lines = () => page.$$eval('#transcript li', (els) => els.map((e) => (e.textContent ?? '').replace(/\s+/g, ' ').trim()));
// Functions given to page.evaluate/waitForFunction run in the page (serialized by Playwright);
// the tests are type-checked without the DOM library, hence `globalThis as any` there.

describe('the desk in Chromium', () => {
  it('a login link signs the browser in once: httpOnly SameSite=Strict cookie, token out of the address bar', async () => {
    const link = await issueLoginLink(svc.service.store, alice.accountId, stub.url, 15 * 60_000, new Date());
    await page.goto(link.url);
    await page.waitForURL(`${stub.url}/desk/`);
    await page.waitForFunction(() => (globalThis as any).document.getElementById('who').textContent.startsWith('Signed in to test'));
    expect(await text('#who')).toContain(alice.accountId);
    const cookies = await context.cookies(stub.url);
    expect(cookies.map((c) => [c.name, c.httpOnly, c.sameSite, c.path])).toEqual([['scribed_desk', true, 'Strict', '/']]);
    expect(await page.evaluate(() => (globalThis as any).document.cookie)).toBe(''); // the page's scripts never see it
    // The link is spent: opened again (another tab), it says so and signs nothing in.
    const again = await context.newPage();
    await again.goto(link.url);
    await again.waitForFunction(() => /not valid/.test((globalThis as any).document.getElementById('login-state').textContent));
    expect(again.url()).toBe(`${stub.url}/desk/login`); // the fragment left the address bar at once
    expect(await axeViolations(again, ['color-contrast', 'document-title', 'link-name'])).toEqual([]);
    await again.close();
  });

  it('search finds the phrase; the call reads with speakers and times; a word plays the recording from it', async () => {
    await page.fill('#q', 'cancel');
    await page.click('#search-form button[type=submit]');
    await page.waitForFunction(() => (globalThis as any).document.querySelectorAll('#results li').length === 2);
    await page.fill('#q', '"cancel my subscription"');
    await page.fill('#f-speaker', 'customer');
    await page.click('#search-form button[type=submit]');
    await page.waitForFunction(() => (globalThis as any).document.getElementById('search-state').textContent === '1 result.');
    expect(await page.$$eval('#results li mark', (els) => els.map((e) => e.textContent))).toEqual(['cancel my subscription']);
    expect(await text('#results li .meta')).toMatch(new RegExp(`^customer · 0:01\\.3-0:02\\.9 · call ${ids.heard}`));

    await page.click('#results li a');
    await page.waitForFunction(() => (globalThis as any).document.querySelectorAll('#transcript li').length === 2);
    expect(await text('#reader-heading')).toBe('Call: Cancellation call');
    expect(await lines()).toEqual(['0:00.2-0:01.2 agent: thank you for calling', '0:01.3-0:02.9 customer: I want to cancel my subscription']);
    expect(await page.$eval('#transcript li.hit', (e) => e.textContent)).toContain('cancel my subscription');

    // The recording (stereo: the call has two legs), then a click on "subscription".
    await page.waitForFunction(() => {
      const p = (globalThis as any).document.getElementById('player');
      return !p.hidden && p.readyState >= 1;
    });
    expect(stub.served).toContain(`GET ${STT}/calls/${ids.heard}/audio?leg=stereo 200`);
    const word = page.locator('#transcript .word', { hasText: 'subscription' });
    const startMs = Number(await word.getAttribute('data-start-ms'));
    expect(startMs).toBeGreaterThan(2000);
    await word.click();
    const at = await page.evaluate(() => (globalThis as any).document.getElementById('player').currentTime * 1000);
    expect(Math.abs(at - startMs)).toBeLessThan(50);
    // Playing from there: time moves on and the word being said is marked.
    await page.waitForFunction((ms) => (globalThis as any).document.getElementById('player').currentTime * 1000 > ms + 100, startMs, { timeout: 5000 });
    // A line's time plays from the line's start: the keyboard's way in (Tab, a visible focus, Enter).
    await page.focus('#transcript li:first-child .seek');
    await page.keyboard.press('Shift+Tab');
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => (globalThis as any).document.activeElement.getAttribute('aria-label'))).toBe('0:00.2-0:01.2, play from here');
    expect(await page.evaluate(() => (globalThis as any).getComputedStyle((globalThis as any).document.activeElement).outlineStyle)).toBe('solid');
    await page.keyboard.press('Enter');
    expect(Math.abs((await page.evaluate(() => (globalThis as any).document.getElementById('player').currentTime)) - 0.2)).toBeLessThan(0.05);
    expect(await axeViolations(page)).toEqual([]);

    // A call with no recording says so.
    await page.evaluate((id) => ((globalThis as any).location.hash = `#call=${id}`), ids.billing);
    await page.waitForFunction(() => !(globalThis as any).document.getElementById('no-recording').hidden);
    expect(await lines()).toEqual(['0:00.5-0:02.0 customer: please cancel the invoice']);
    expect(await page.$eval('#player', (e) => (e as any).hidden)).toBe(true);
  });

  it("watches a live session and shows its alert as it arrives; axe finds nothing; logout ends the session", async () => {
    await page.click('#live-refresh');
    const watchButton = page.locator(`#live-list button[data-session-id="${ids.live}"]`);
    await watchButton.waitFor();
    expect(await page.locator('#live-list li').count()).toBe(1); // the ended calls' legs are not live
    await watchButton.click();
    await page.waitForFunction(() => (globalThis as any).document.getElementById('watch-state').textContent.startsWith('Live: no client is streaming'));
    // What a live rule's match does: an alert on the session's fan-out (stream socket and watchers).
    const session = svc.service.sessions.served(ids.live) as any;
    session.events.emit({
      type: 'alert',
      alertId: 'alt_test',
      ruleId: 'rule_test',
      ruleName: 'Cancellation risk',
      condition: 'phrases',
      segmentId: 'seg_0',
      final: true,
      text: 'I want to cancel my subscription',
      match: { text: 'cancel my subscription', start: 10, end: 32 },
      speaker: 'customer',
      callId: ids.liveCall,
      startMs: 61_300,
      endMs: 62_900,
    });
    await page.waitForFunction(() => !(globalThis as any).document.getElementById('alert-banner').hidden);
    const said = 'Alert: Cancellation risk (customer): "cancel my subscription" at 1:01.3';
    expect(await text('#alert-banner')).toBe(said);
    expect(await page.$$eval('#alerts li', (els) => els.map((e) => e.textContent))).toEqual([said]);
    expect(await page.$eval('#alert-banner', (e) => e.getAttribute('role'))).toBe('alert');
    expect(await axeViolations(page)).toEqual([]);
    // Nothing scrolls sideways at 400 px.
    await page.setViewportSize({ width: 400, height: 800 });
    expect(await page.evaluate(() => (globalThis as any).document.documentElement.scrollWidth)).toBeLessThanOrEqual(400);

    await page.click('#logout');
    await page.waitForFunction(() => !(globalThis as any).document.getElementById('signed-out').hidden);
    expect(await text('#signed-out-why')).toBe('You have logged out.');
    const cookie = (await context.cookies(stub.url)).map((c) => `${c.name}=${c.value}`).join('; ');
    expect((await fetch(`${svc.baseUrl}${STT}/search?q=cancel`, { headers: { cookie } })).status).toBe(401);
    await page.reload();
    await page.waitForFunction(() => (globalThis as any).document.getElementById('who').textContent === 'Not signed in');
    expect(await axeViolations(page)).toEqual([]);
  });
});
