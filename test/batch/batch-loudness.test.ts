// Loudness of batch legs (docs/analytics.md, "Loudness"): a two-channel call recording of real
// speech (the agent, then the customer; each channel silent while the other party speaks)
// uploaded as a multichannel batch transcription on the store under test. When the call is
// complete its analytics give each leg a level track measured as a live leg's is (one frame a
// second, the same core: src/core/analytics/levels.ts), checked against ffmpeg's volumedetect
// over that channel's audio, and loud where the leg speaks, near silent where it does not.
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, tempDir, type TestService } from '../helpers/service.js';
import { loadClips } from '../helpers/audio.js';
import type { ProvisionedAccount } from '../../src/accounts/provision.js';

const STT = '/sound_clone/api/v1/stt';
const clips = loadClips();
const agentClip = clips.find((c) => c.id === 'librivox-0870')!;
const customerClip = clips.find((c) => c.id === 'librivox-0920')!;
const GAP_S = 0.5;

let svc: TestService;
let alice: ProvisionedAccount;
const dir = tempDir('scribed-batch-loudness-');
const files = { agent: path.join(dir, 'agent.wav'), customer: path.join(dir, 'customer.wav'), stereo: path.join(dir, 'call.wav') };

function sox(...args: string[]): void {
  execFileSync('sox', args, { stdio: ['ignore', 'ignore', 'pipe'] });
}

/** ffmpeg's mean volume of a file, dBFS (as the live analytics test checks live legs). */
function meanVolume(file: string): number {
  const out = execFileSync('sh', ['-c', `ffmpeg -hide_banner -i "$1" -ac 1 -ar 16000 -af volumedetect -f null - 2>&1`, 'sh', file], {
    encoding: 'utf8',
  });
  return Number(/mean_volume: (-?[\d.]+) dB/.exec(out)![1]);
}

beforeAll(async () => {
  sox(agentClip.wavFile, '-r', '16000', files.agent, 'pad', '0', String(customerClip.durationSec + GAP_S));
  sox(customerClip.wavFile, '-r', '16000', files.customer, 'pad', String(agentClip.durationSec + GAP_S), '0');
  sox('-M', files.agent, files.customer, files.stereo);
  svc = await startService({ maxDecoders: 2 });
  alice = await svc.account(10_000n);
}, 60_000);
afterAll(async () => {
  await svc?.stop();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('a multichannel batch call', () => {
  it("has each leg's loudness, per second, as volumedetect measures its channel", async () => {
    const form = new FormData();
    form.append('options', JSON.stringify({ multichannel: true }));
    form.append('file', new Blob([fs.readFileSync(files.stereo)]), 'call.wav');
    const res = await fetch(`${svc.baseUrl}${STT}/transcriptions`, { method: 'POST', headers: { accessKey: alice.accessKey }, body: form });
    const json = (await res.json()) as any;
    expect(res.status, JSON.stringify(json)).toBe(200);
    const callId = json.data.callId as string;
    await svc.service.batch.idle();

    const got = await fetch(`${svc.baseUrl}${STT}/calls/${callId}/analytics`, { headers: { accessKey: alice.accessKey } });
    const a = (await got.json()) as any;
    expect(got.status, JSON.stringify(a)).toBe(200);
    const seconds = agentClip.durationSec + customerClip.durationSec + GAP_S;
    const speaks = { agent: [0, agentClip.durationSec], customer: [agentClip.durationSec + GAP_S, seconds] };
    for (const speaker of ['agent', 'customer'] as const) {
      const leg = a.data.figures.legs.find((l: any) => l.speaker === speaker);
      const loud = leg.loudness;
      expect(loud, speaker).not.toBeNull();
      expect(loud.frameMs).toBe(1000);
      expect(loud.track).toHaveLength(Math.ceil(seconds));
      const mean = meanVolume(files[speaker]);
      expect(Math.abs(loud.meanDbfs - mean), `${speaker} mean level ${loud.meanDbfs} vs ffmpeg ${mean}`).toBeLessThan(0.2);
      expect(loud.talkDbfs).toBeGreaterThan(loud.meanDbfs);
      // Loud in the seconds the leg speaks, near silent in those wholly in the other's turn.
      const [from, to] = speaks[speaker];
      const inside = (loud.track as number[]).filter((_, i) => i >= Math.ceil(from) && i + 1 <= Math.floor(to));
      const outside = (loud.track as number[]).filter((_, i) => i + 1 <= Math.floor(from) || i >= Math.ceil(to));
      expect(inside.length).toBeGreaterThan(2);
      expect(outside.length).toBeGreaterThan(2);
      expect(Math.min(...inside.map((x) => x ?? -100)) - Math.max(...outside.map((x) => x ?? -100))).toBeGreaterThan(20);
    }
  }, 60_000);
});
