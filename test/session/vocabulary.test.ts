// vocabularyHints on real speech: the hinted words are recognized where they were missed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type TestService } from '../helpers/service.js';
import { loadClips, pcmSamples } from '../helpers/audio.js';
import { createSession, streamAndClose } from '../helpers/live.js';
import type { ProvisionedAccount } from '../../src/accounts/provision.js';

const byId = (id: string) => loadClips().find((c) => c.id === id)!;

let svc: TestService;
let acct: ProvisionedAccount;
beforeAll(async () => {
  svc = await startService();
  acct = await svc.account(100_000n);
}, 60_000);
afterAll(async () => {
  await svc?.stop();
});

async function transcribe(id: string, options: Record<string, unknown>) {
  const s = await createSession(svc, acct.accessKey, options);
  const { finals, events } = await streamAndClose(svc, acct.accessKey, s.streamUrl, pcmSamples(byId(id)));
  // The recognizer's words (rawText where readableText changed them): hints act on recognition.
  return { text: finals.map((f) => f.rawText ?? f.text).join(' '), notices: events.filter((e) => e.type === 'notice') };
}

describe('vocabularyHints', () => {
  it('a hinted phrase missed without the hint is recognized with it', async () => {
    // "he was not an ill disposed young man"
    const before = await transcribe('librivox-0880', {});
    const after = await transcribe('librivox-0880', { vocabularyHints: ['ill disposed'] });
    console.log(`vocabulary hint "ill disposed":\n  without: "${before.text}"\n  with:    "${after.text}"`);
    expect(before.text).not.toContain('ill disposed');
    expect(after.text).toContain('ill disposed');
    expect(after.notices).toEqual([]);
  }, 120_000);

  it('a word missing from the dictionary is added with a derived pronunciation and recognized', async () => {
    // "and mister john dashwood had then leisure ..."; "johndashwood" is no dictionary word
    const after = await transcribe('librivox-0870', { vocabularyHints: ['Johndashwood', 'Qzxv'] });
    expect(after.text).toContain('johndashwood');
    // the word no pronunciation could be found for is reported, not silently dropped
    expect(after.notices).toHaveLength(1);
    expect(after.notices[0]).toMatchObject({ code: 'VOCABULARY_HINTS_NOT_APPLIED' });
    expect(after.notices[0]!.message).toContain('qzxv');
  }, 120_000);
});
