// Music projects through HTTP against a real server: capabilities, create/read, the
// whole-brief replace with 47001 / 47009 / 47010 and each brief limit at and past its
// bound, the arrangement job, quotes and generate, and resuming jobs after a restart.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, tempDir, type TestService } from '../helpers/service.js';
import { call } from '../helpers/api.js';
import type { ProvisionedAccount } from '../../src/accounts/provision.js';

const API = '/sound_clone/api/v1/music';
const JOB_DELAY_MS = 700;
let svc: TestService;
let alice: ProvisionedAccount;
let bob: ProvisionedAccount;

beforeAll(async () => {
  svc = await startService({ arrangementJobDelayMs: JOB_DELAY_MS });
  alice = await svc.account(100_000n);
  bob = await svc.account(100_000n);
});
afterAll(async () => {
  await svc?.stop();
});

const api = (method: string, path: string, opts: Parameters<typeof call>[3] = {}) =>
  call(svc.baseUrl, method, path, { key: alice.accessKey, ...opts });

const brief = (over: Record<string, unknown> = {}) => ({
  description: 'A bright song about a morning bike ride',
  genre: 'pop',
  styleNotes: 'handclaps',
  moods: ['happy', 'energetic'],
  vocalLanguage: 'en',
  durationSec: 120,
  lyricsMode: 'AUTO',
  vocalStyle: 'female',
  ...over,
});

async function create(b: unknown = brief(), who = alice) {
  const r = await api('POST', `${API}/projects`, { key: who.accessKey, body: b });
  expect(r.status, r.text).toBe(200);
  return r.json.data;
}

async function untilReady(projectId: string, who = alice, base = svc.baseUrl) {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const r = await call(base, 'GET', `${API}/projects/${projectId}`, { key: who.accessKey });
    if (r.json.data.projectStatus === 'ARRANGEMENT_READY') return r.json.data;
    if (Date.now() > deadline) throw new Error(`project ${projectId} still ${r.json.data.projectStatus}`);
    await new Promise((res) => setTimeout(res, 100));
  }
}

const putBrief = (projectId: string, b: unknown, who = alice) =>
  api('PUT', `${API}/projects/${projectId}/brief`, { key: who.accessKey, body: b });

describe('capabilities', () => {
  it('lists genres, at least 4 moods, vocal languages with code and name, and vocal styles', async () => {
    const r = await api('GET', `${API}/capabilities`);
    expect(r.json.code).toBe(1);
    const d = r.json.data;
    expect(d.genres).toContain('pop');
    expect(d.moods.length).toBeGreaterThanOrEqual(4);
    expect(d.supportedVocalLanguages).toContainEqual({ code: 'en', name: 'English' });
    expect(d.vocalStyles.length).toBeGreaterThan(0);
  });
});

describe('create and read', () => {
  it('creates a project generating its first arrangement, readable with the same shape', async () => {
    const p = await create();
    expect(p.projectId).toMatch(/^mup_/);
    expect(p).toMatchObject({ projectStatus: 'ARRANGEMENT_GENERATING', arrangementVersion: 1, activeQuote: null, arrangement: null });
    expect(p.requestId).toMatch(/^req_/);
    const read = await api('GET', `${API}/projects/${p.projectId}`);
    expect(Object.keys(read.json.data).sort()).toEqual(Object.keys(p).sort());
  });

  it('ends the job in ARRANGEMENT_READY with sections from 0 to durationSec', async () => {
    const p = await create(brief({ durationSec: 90, genre: 'rock' }));
    const ready = await untilReady(p.projectId);
    const plan = ready.arrangement;
    expect(plan.durationSec).toBe(90);
    expect(plan.tempoBpm).toBeGreaterThan(0);
    expect(plan.sections[0].startSec).toBe(0);
    expect(plan.sections.at(-1).endSec).toBe(90);
    for (let i = 1; i < plan.sections.length; i++) expect(plan.sections[i].startSec).toBe(plan.sections[i - 1].endSec);
    expect(plan.sections.map((s: any) => s.name)).toContain('solo');
  });

  it("reads another account's project as 47009", async () => {
    const p = await create();
    const r = await api('GET', `${API}/projects/${p.projectId}`, { key: bob.accessKey });
    expect(r.status).toBe(404);
    expect(r.json.code).toBe(47009);
  });

  it('refuses an invalid brief at creation with 47001', async () => {
    const r = await api('POST', `${API}/projects`, { body: brief({ genre: 'polka' }) });
    expect(r.json.code).toBe(47001);
  });
});

describe('PUT brief', () => {
  it('replaces the whole brief: ARRANGEMENT_GENERATING, version + 1, activeQuote null, same shape as a read', async () => {
    const p = await create();
    await untilReady(p.projectId);
    const q = await api('POST', `${API}/projects/${p.projectId}/quotes`);
    expect(q.json.code).toBe(1);
    const r = await putBrief(p.projectId, brief({ genre: 'jazz', moods: ['calm'], styleNotes: undefined }));
    expect(r.status).toBe(200);
    const d = r.json.data;
    expect(d).toMatchObject({ projectId: p.projectId, projectStatus: 'ARRANGEMENT_GENERATING', arrangementVersion: 2, activeQuote: null });
    expect(d.requestId).toMatch(/^req_/);
    expect(d.brief).toMatchObject({ genre: 'jazz', moods: ['calm'], styleNotes: null });
    const read = await api('GET', `${API}/projects/${p.projectId}`);
    expect(Object.keys(read.json.data).sort()).toEqual(Object.keys(d).sort());
    const ready = await untilReady(p.projectId);
    expect(ready.arrangementVersion).toBe(2);
    expect(ready.arrangement.sections.map((s: any) => s.name)).toContain('head'); // jazz form
  });

  it('answers 47010 while the arrangement job runs, saying to retry when ARRANGEMENT_READY', async () => {
    const p = await create();
    const r = await putBrief(p.projectId, brief());
    expect(r.status).toBe(409);
    expect(r.json.code).toBe(47010);
    expect(r.json.message).toMatch(/ARRANGEMENT_GENERATING.*retry when projectStatus is ARRANGEMENT_READY/);
  });

  it('answers 47010 after generate without promising ARRANGEMENT_READY (it never comes)', async () => {
    const p = await create(brief({ durationSec: 60 }));
    await untilReady(p.projectId);
    const q = (await api('POST', `${API}/projects/${p.projectId}/quotes`)).json.data;
    expect((await api('POST', `${API}/projects/${p.projectId}/generate`, { body: { quoteId: q.quoteId } })).json.code).toBe(1);
    for (const r of [await putBrief(p.projectId, brief()), await api('POST', `${API}/projects/${p.projectId}/quotes`)]) {
      expect(r.status).toBe(409);
      expect(r.json.code).toBe(47010);
      expect(r.json.message).toMatch(/GENERATION_QUEUED.*can no longer change/);
      expect(r.json.message).not.toMatch(/ARRANGEMENT_READY/);
    }
  });

  it("answers 47009 for another account's project, even with a valid brief", async () => {
    const p = await create();
    await untilReady(p.projectId);
    const r = await putBrief(p.projectId, brief(), bob);
    expect(r.status).toBe(404);
    expect(r.json.code).toBe(47009);
  });

  it('answers 47009 for a missing project', async () => {
    expect((await putBrief('mup_00000000000000000000', brief())).json.code).toBe(47009);
  });

  describe('validation (47001), at and past each bound', () => {
    let projectId: string;
    beforeAll(async () => {
      projectId = (await create()).projectId;
      await untilReady(projectId);
    });
    const refused = async (b: unknown, field: string) => {
      const r = await putBrief(projectId, b);
      expect(r.status, JSON.stringify(b).slice(0, 80)).toBe(422);
      expect(r.json.code).toBe(47001);
      expect(r.json.message).toContain(field);
      const read = await api('GET', `${API}/projects/${projectId}`);
      expect(read.json.data.projectStatus).toBe('ARRANGEMENT_READY'); // nothing changed
    };
    // Valid bounds are checked through the pure validator (test/core/music-brief.test.ts)
    // and here once, since each accepted PUT starts a job.
    it('refuses description of 0 and 801 code points (800 astral characters are 1600 UTF-16 units and pass)', async () => {
      await refused(brief({ description: '' }), 'description');
      await refused(brief({ description: 'a'.repeat(801) }), 'description');
      const r = await putBrief(projectId, brief({ description: '😀'.repeat(800) }));
      expect(r.json.code).toBe(1);
      await untilReady(projectId);
    });
    it('refuses styleNotes of 121 code points', () => refused(brief({ styleNotes: 'a'.repeat(121) }), 'styleNotes'));
    it('refuses 0 and 4 moods, and repeated moods', async () => {
      await refused(brief({ moods: [] }), 'moods');
      await refused(brief({ moods: ['happy', 'sad', 'calm', 'dark'] }), 'moods');
      await refused(brief({ moods: ['happy', 'happy'] }), 'moods');
    });
    it('refuses a mood, genre, language or vocal style outside the capabilities', async () => {
      await refused(brief({ moods: ['angry'] }), 'moods');
      await refused(brief({ genre: 'Pop' }), 'genre');
      await refused(brief({ vocalLanguage: 'xx' }), 'vocalLanguage');
      await refused(brief({ vocalStyle: 'robot' }), 'vocalStyle');
    });
    it('refuses durationSec outside 60, 90, 120, 180', async () => {
      await refused(brief({ durationSec: 61 }), 'durationSec');
      await refused(brief({ durationSec: '60' }), 'durationSec');
    });
    it('refuses CUSTOM without lyrics, with 19 code points, with 2801; and lyrics with AUTO', async () => {
      await refused(brief({ lyricsMode: 'CUSTOM' }), 'customLyrics');
      await refused(brief({ lyricsMode: 'CUSTOM', customLyrics: 'a'.repeat(19) }), 'customLyrics');
      await refused(brief({ lyricsMode: 'CUSTOM', customLyrics: 'a'.repeat(2801) }), 'customLyrics');
      await refused(brief({ lyricsMode: 'AUTO', customLyrics: 'a'.repeat(40) }), 'customLyrics');
    });
    it('refuses a missing required field and an unknown field', async () => {
      const { genre: _g, ...noGenre } = brief();
      await refused(noGenre, 'genre');
      await refused(brief({ tempo: 120 }), 'tempo');
    });
  });
});

describe('quotes and generate', () => {
  it('makes the quote the active quote; generate with it debits and queues generation', async () => {
    const p = await create(brief({ durationSec: 60 }));
    await untilReady(p.projectId);
    const q = (await api('POST', `${API}/projects/${p.projectId}/quotes`)).json.data;
    expect(q.quoteId).toMatch(/^mq_/);
    expect(q).toMatchObject({ characters: '600', arrangementVersion: 1 });
    expect((await api('GET', `${API}/projects/${p.projectId}`)).json.data.activeQuote).toMatchObject({ quoteId: q.quoteId });
    const before = (await api('GET', '/sound_clone/api/v1/account')).json.data.characters;
    const g = await api('POST', `${API}/projects/${p.projectId}/generate`, { body: { quoteId: q.quoteId } });
    expect(g.json.code).toBe(1);
    expect(g.json.data).toMatchObject({ projectStatus: 'GENERATION_QUEUED', activeQuote: null });
    expect(g.json.data.generation).toMatchObject({ quoteId: q.quoteId, characters: '600' });
    expect(BigInt((await api('GET', '/sound_clone/api/v1/account')).json.data.characters)).toBe(BigInt(before) - 600n);
  });

  it('refuses a quote replaced by a newer one as stale', async () => {
    const p = await create();
    await untilReady(p.projectId);
    const old = (await api('POST', `${API}/projects/${p.projectId}/quotes`)).json.data;
    await api('POST', `${API}/projects/${p.projectId}/quotes`);
    const g = await api('POST', `${API}/projects/${p.projectId}/generate`, { body: { quoteId: old.quoteId } });
    expect(g.status).toBe(409);
    expect(g.json.message).toMatch(/^MUSIC_QUOTE_STALE/);
  });

  it('refuses a quote made stale by a brief update', async () => {
    const p = await create();
    await untilReady(p.projectId);
    const q = (await api('POST', `${API}/projects/${p.projectId}/quotes`)).json.data;
    await putBrief(p.projectId, brief({ durationSec: 60 }));
    await untilReady(p.projectId);
    const g = await api('POST', `${API}/projects/${p.projectId}/generate`, { body: { quoteId: q.quoteId } });
    expect(g.json.message).toMatch(/^MUSIC_QUOTE_STALE/);
  });

  it('answers 47010 for a quote while the arrangement job runs', async () => {
    const p = await create();
    const r = await api('POST', `${API}/projects/${p.projectId}/quotes`);
    expect(r.json.code).toBe(47010);
  });

  it('refuses generate when the balance is short, and keeps the quote', async () => {
    const poor = await svc.account(100n);
    const p = await create(brief(), poor);
    await untilReady(p.projectId, poor);
    const q = (await api('POST', `${API}/projects/${p.projectId}/quotes`, { key: poor.accessKey })).json.data;
    const g = await api('POST', `${API}/projects/${p.projectId}/generate`, { key: poor.accessKey, body: { quoteId: q.quoteId } });
    expect(g.status).toBe(402);
    expect((await api('GET', `${API}/projects/${p.projectId}`, { key: poor.accessKey })).json.data.activeQuote.quoteId).toBe(q.quoteId);
  });
});

describe('restart', () => {
  it('resumes a pending arrangement job after a restart', async () => {
    const dataDir = tempDir();
    const first = await startService({ dataDir, arrangementJobDelayMs: 60_000 });
    const acct = await first.account(1000n);
    const p = (await call(first.baseUrl, 'POST', `${API}/projects`, { key: acct.accessKey, body: brief() })).json.data;
    await first.stop();
    const second = await startService({ dataDir, arrangementJobDelayMs: 0 });
    try {
      const ready = await untilReady(p.projectId, acct, second.baseUrl);
      expect(ready.arrangement.durationSec).toBe(120);
    } finally {
      await second.stop();
    }
  });
});
