// The desk's agent view and call timeline (docs/desk.md, docs/analytics.md) in Chromium: a
// two-leg call of real speech with a known agent id and a silence of about 6 s between the
// parties, streamed to the real recognizer; when it ends its analytics are computed. The agent
// view shows the API's figures for that agent and links the call; the call's timeline has a
// lane of speech per party placed at the words' times, the silence and the category it matched,
// the live rule's alert kept with the call, each mark playing the recording from its start; axe-core finds nothing on either.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { startService, type TestService } from '../helpers/service.js';
import { loadClips, pcmSamples } from '../helpers/audio.js';
import { concat, createSession, streamAndClose } from '../helpers/live.js';
import { axeViolations } from '../helpers/axe.js';
import type { ProvisionedAccount } from '../../src/accounts/provision.js';
import { issueLoginLink } from '../../src/desk/login-link.js';
import { launchChromium } from '../console/browser.js';

const STT = '/sound_clone/api/v1/stt';
const RATE = 16000;
const AGENT_ID = 'agent-desk-7';
const CUSTOMER_DELAY_S = 9; // the customer answers 9 s in: about 6 s of silence after the agent
const clips = loadClips();
const agentClip = clips.find((c) => c.id === 'librivox-0880')!;
const customerClip = clips.find((c) => c.id === 'librivox-0930')!;

let svc: TestService;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let alice: ProvisionedAccount;
let callId = '';
let analytics: any;
let aggregate: any;
let transcript: {
  durationMs: number;
  segments: Array<{ speaker: string; text: string; words: Array<{ startMs: number; endMs: number }> }>;
};

async function api(method: 'GET' | 'POST', p: string, body?: unknown): Promise<{ status: number; json: any }> {
  const res = await fetch(`${svc.baseUrl}${STT}${p}`, {
    method,
    headers: {
      accessKey: alice.accessKey,
      ...(body === undefined ? {} : { 'content-type': 'application/json', 'Idempotency-Key': `desk-${randomUUID()}` }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, json: await res.json() };
}

beforeAll(async () => {
  svc = await startService({ maxDecoders: 1, maxStreamsPerAccount: 0 });
  alice = await svc.account(100_000n);
  const category = await api('POST', '/categories', { name: 'A silence over 5 s', conditions: [{ silenceSeconds: 5 }] });
  expect(category.status).toBe(201);
  // A live rule: the customer's leg is silent for 9 s before it speaks, so it alerts there.
  const rule = await api('POST', '/rules', { name: 'Long wait', silenceSeconds: 5, speaker: 'customer' });
  expect(rule.status).toBe(201);
  const call = await api('POST', '/calls', { title: 'Renewal call', externalId: 'CA-agent-1', agentId: AGENT_ID });
  callId = call.json.data.callId;
  const legs: Array<[string, Int16Array]> = [
    ['agent', pcmSamples(agentClip)],
    ['customer', concat([new Int16Array(CUSTOMER_DELAY_S * RATE), pcmSamples(customerClip)])],
  ];
  for (const [speaker, samples] of legs) {
    const leg = await createSession(
      svc,
      alice.accessKey,
      { inputEncoding: 'pcm_s16le_16000', recordAudio: true },
      { title: `Renewal call: ${speaker}`, callId, speaker },
    );
    await streamAndClose(svc, alice.accessKey, leg.streamUrl, samples);
  }
  // Analytics are computed when the call's last leg ends; the recording is stored as it does.
  for (let i = 0; i < 150 && !analytics; i++) {
    const a = await api('GET', `/calls/${callId}/analytics`);
    if (a.status === 200) analytics = a.json.data;
    else await new Promise((r) => setTimeout(r, 100));
  }
  if (!analytics) throw new Error('no analytics for the call');
  aggregate = (await api('GET', `/agents/${AGENT_ID}/analytics`)).json.data;
  const t = await fetch(`${svc.baseUrl}${STT}/calls/${callId}/transcript?format=json`, { headers: { accessKey: alice.accessKey } });
  transcript = (await t.json()) as typeof transcript;
  browser = await launchChromium();
  // bypassCSP only so that axe-core can be added to the page; the page's own code is unchanged.
  context = await browser.newContext({ bypassCSP: true, viewport: { width: 1000, height: 900 } });
  page = await context.newPage();
  // A script error on the page would otherwise read as a timeout.
  page.on('pageerror', (e) => console.error('desk page error:', e.message));
  const link = await issueLoginLink(svc.service.store, alice.accountId, svc.baseUrl, 15 * 60_000, new Date());
  await page.goto(link.url);
  // The login page posts the link's token, then moves to the desk.
  await page.waitForURL(`${svc.baseUrl}/desk/`);
  await page.waitForFunction(() => (globalThis as any).document.getElementById('who')?.textContent.startsWith('Signed in to'));
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await svc?.stop();
});

const text = (sel: string) => page.$eval(sel, (e) => (e.textContent ?? '').trim());
/** The marks of a lane of the timeline: their times and where they sit (percent of the call). */
const marks = (lane: string) =>
  page.$$eval(`#timeline .lane-${lane} .mark`, (els) =>
    els.map((e: any) => ({
      startMs: Number(e.dataset.startMs),
      endMs: Number(e.dataset.endMs),
      left: parseFloat(e.style.left),
      label: e.getAttribute('aria-label') as string,
    })),
  );

describe("the desk's agent view and call timeline", () => {
  it("the agent view shows the API's figures for the agent over the range and links its call", async () => {
    expect(aggregate.calls).toBe(1);
    expect(aggregate.items.map((c: any) => c.callId)).toEqual([callId]);
    await page.fill('#a-agent', AGENT_ID);
    await page.click('#agent-form button[type=submit]');
    await page.waitForFunction(() => (globalThis as any).document.getElementById('agent-state').textContent.startsWith('1 call'));
    const facts = await page.$$eval('#agent-view dl.figures dd', (els) => els.map((e) => (e.textContent ?? '').trim()));
    expect(facts[0]).toBe('1');
    expect(facts[2]).toBe(`${Math.round(aggregate.averageTalkShare * 100)}%`);
    expect(facts[4]).toBe(String(Math.round(aggregate.averageWordsPerMinute)));
    const rates = await page.$$eval('#agent-view table:first-of-type tbody tr', (els) => els.map((e) => (e.textContent ?? '').trim()));
    expect(rates).toEqual(['A silence over 5 s1100%']);
    const agentLeg = analytics.figures.legs.find((l: any) => l.speaker === 'agent');
    const row = await page.$$eval('#agent-view table:last-of-type tbody tr td', (els) => els.map((e) => (e.textContent ?? '').trim()));
    expect(row[2]).toBe(`${Math.round(agentLeg.talkShare * 100)}%`);
    expect(row[5]).toBe('A silence over 5 s');
    expect(await page.getAttribute('#agent-view table:last-of-type a', 'href')).toBe(`#call=${callId}`);
    expect(await axeViolations(page, ['color-contrast', 'label', 'link-name', 'th-has-data-cells'])).toEqual([]);
  });

  it("the call's timeline: each party's speech at its words' times, the silence and its category, each playing from its start", async () => {
    await page.click('#agent-view table:last-of-type a');
    await page.waitForFunction(() => !(globalThis as any).document.getElementById('timeline-box').hidden);
    expect(await text('#timeline-figures')).toContain(
      `agent talks ${Math.round(analytics.figures.legs.find((l: any) => l.speaker === 'agent').talkShare * 100)}%`,
    );
    const lanes = await page.$$eval('#timeline .lane', (els) => els.map((e) => e.getAttribute('aria-label')));
    expect(lanes).toEqual(['agent speaks', 'customer speaks', 'Silences over 5 s', 'Interruptions', 'Categories', 'Alerts']);
    const durationMs = analytics.figures.durationMs;
    const speech = await marks('speech');
    const expected = transcript.segments
      .filter((s) => s.words.length > 0)
      .map((s) => ({ speaker: s.speaker, startMs: s.words[0]!.startMs, endMs: s.words.at(-1)!.endMs }));
    expect(speech.map((m) => [m.startMs, m.endMs]).sort((a, b) => a[0]! - b[0]!)).toEqual(
      expected.map((e) => [e.startMs, e.endMs]).sort((a, b) => a[0]! - b[0]!),
    );
    // The customer's speech sits after the delay, the agent's before it, on the call's time line.
    for (const m of speech) {
      expect(m.left).toBeCloseTo((m.startMs / durationMs) * 100, 2);
      expect(m.label.startsWith('customer') ? m.startMs >= CUSTOMER_DELAY_S * 1000 : m.endMs <= CUSTOMER_DELAY_S * 1000).toBe(true);
    }
    const silences = await marks('silence');
    expect(silences.map((m) => [m.startMs, m.endMs])).toEqual(analytics.figures.nonTalk.spans.map((s: any) => [s.startMs, s.endMs]));
    expect(silences.length).toBeGreaterThan(0);
    const hits = await marks('category');
    expect(hits.map((m) => m.label.split(':')[0])).toEqual(['A silence over 5 s']);
    expect(hits[0]!.startMs).toBe(silences[0]!.startMs);
    // The recording plays from the silence's start when its mark is clicked.
    await page.waitForFunction(() => !(globalThis as any).document.getElementById('player').hidden, undefined, { timeout: 20_000 });
    await page.click('#timeline .lane-silence .mark');
    const at = await page.evaluate(() => (globalThis as any).document.getElementById('player').currentTime as number);
    expect(Math.abs(at * 1000 - silences[0]!.startMs)).toBeLessThan(300);
    // The live rule's alert, kept with the call: in the analytics and on its own lane, where a
    // click plays from the alert's start.
    expect(analytics.alerts).toHaveLength(1);
    expect(analytics.alerts[0]).toMatchObject({ ruleName: 'Long wait', condition: 'silence', source: 'transcript', speaker: 'customer' });
    const alerts = await marks('alert');
    expect(alerts.map((m) => [m.startMs, m.endMs])).toEqual([[analytics.alerts[0].startMs, analytics.alerts[0].endMs]]);
    expect(alerts[0]!.label).toContain('Alert Long wait');
    expect(alerts[0]!.endMs).toBeGreaterThanOrEqual(CUSTOMER_DELAY_S * 1000 - 1000);
    await page.click('#timeline .lane-alert .mark');
    const atAlert = await page.evaluate(() => (globalThis as any).document.getElementById('player').currentTime as number);
    expect(Math.abs(atAlert * 1000 - alerts[0]!.startMs)).toBeLessThan(300);
    expect(await axeViolations(page, ['color-contrast', 'button-name', 'link-name'])).toEqual([]);
  });
});
