// samples/pbx-sim.mjs, the PBX simulator the README offers for trying `scribed gateway`: run
// as a user runs it against a real gateway and server, each protocol's call must come out as
// a two-speaker transcript of the two clips it plays.
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLIPS, mergedTranscript, PBX_TOKEN, startRig, stopAll, werOf, type GatewayProcess, type Rig } from './harness.js';

const SIM = path.resolve(import.meta.dirname, '../../samples/pbx-sim.mjs');
let rig: Rig;
let gateway: GatewayProcess;

beforeAll(async () => {
  rig = await startRig();
  gateway = await rig.startGateway();
}, 120_000);
afterAll(() => stopAll(rig.children));

async function simulate(protocol: string, extra: string[]): Promise<string> {
  const target = protocol === 'audiosocket' ? `127.0.0.1:${rig.asPort}` : `ws://127.0.0.1:${rig.wsPort}`;
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [SIM, '--protocol', protocol, '--gateway', target, '--token', PBX_TOKEN, '--speed', '2', ...extra],
    { encoding: 'utf8' },
  );
  return stdout;
}

describe('samples/pbx-sim.mjs against scribed gateway', () => {
  it.each([
    ['twilio', [], ['inbound', 'outbound']],
    ['fork', ['--rate', '16000'], ['caller', 'callee']],
    ['audiosocket', [], ['customer', 'agent']],
  ] as const)('%s: one call, both parties transcribed under their speakers', async (protocol, extra, [speakerA, speakerB]) => {
    const before = gateway.lines.filter((l) => l.msg === 'leg closed').length;
    const out = await simulate(protocol, [...extra]);
    expect(out).toMatch(new RegExp(`pbx-sim: ${protocol} call \\S+, two parties`));
    expect(out).toContain('pbx-sim: call ended');
    const closed = (await gateway.waitFor((l) => l.msg === 'leg closed', before + 2, 60_000)).slice(before);
    const callId = closed[0]!.callId!;
    expect(callId).toBeTruthy();
    expect(closed[1]!.callId).toBe(callId);
    const { segments } = await mergedTranscript(rig, callId);
    expect(new Set(segments.map((s) => s.speaker))).toEqual(new Set([speakerA, speakerB]));
    // The caller speaks first, the callee answers.
    expect(segments[0]!.speaker).toBe(speakerA);
    // The bound of test/gateway/gateway.test.ts: pocketsphinx on these 3 s clips is at WER
    // 0.25-0.75 per leg; a leg with the other party's words, or none, is >= 1.
    expect(werOf(segments, speakerA, CLIPS.a), JSON.stringify(segments)).toBeLessThan(0.8);
    expect(werOf(segments, speakerB, CLIPS.b), JSON.stringify(segments)).toBeLessThan(0.8);
  });
});
