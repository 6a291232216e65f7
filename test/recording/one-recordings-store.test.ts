// One recordings store per node (src/service.ts): on the embedded store, publishing and deleting
// recordings run one at a time in the process (store/recordings.ts), so a delete that finds a
// file unreferenced cannot remove it while an upload of the same content sits between its
// database commit and its rename. That holds only if every publisher goes through the same
// store: the keeper (a batch job's recording) and the voice routes (a voice upload) here. The
// keeper's commit is held open; the voice upload, started meanwhile, must not reach its own
// commit until the keeper's has finished. (The shared PostgreSQL store orders them with the
// blob's row lock instead; that is tested with the voices and recordings on both stores.)
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type TestService } from '../helpers/service.js';
import { call } from '../helpers/api.js';
import { makeWav } from '../helpers/audio-files.js';

const API = '/sound_clone/api/v1';

let svc: TestService;
beforeAll(async () => {
  svc = await startService();
}, 60_000);
afterAll(async () => {
  await svc?.stop();
});

async function until(cond: () => boolean, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (!cond() && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
  return cond();
}

describe('one recordings store for the node', () => {
  it("a voice upload's publish waits for the keeper's publish in flight (and the recording and the voice are both stored)", async () => {
    const a = await svc.account(10_000n);
    const store = svc.service.store;
    const events: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const saveSessionRecording = store.saveSessionRecording.bind(store);
    const createVoice = store.createVoice.bind(store);
    store.saveSessionRecording = async (...args) => {
      events.push('keeper commit starts');
      await gate;
      const out = await saveSessionRecording(...args);
      events.push('keeper commit ends');
      return out;
    };
    store.createVoice = async (...args) => {
      events.push('voice commit starts');
      return createVoice(...args);
    };
    try {
      // A batch job with recordAudio: its recording is published by the keeper at the job's end.
      const job = new FormData();
      job.append('options', JSON.stringify({ recordAudio: true }));
      job.append('file', new Blob([makeWav()]), 'tone.wav');
      const submitted = await call(svc.baseUrl, 'POST', `${API}/stt/transcriptions`, { key: a.accessKey, rawBody: job });
      expect(submitted.status, submitted.text).toBe(200);
      expect(await until(() => events.includes('keeper commit starts'), 20_000)).toBe(true);

      // Meanwhile a voice upload through the routes.
      const voiceFile = makeWav();
      const form = new FormData();
      form.append('name', 'During a recording');
      form.append('files', new Blob([voiceFile], { type: 'audio/wav' }), 'voice.wav');
      const voice = call(svc.baseUrl, 'POST', `${API}/voices/tts`, { key: a.accessKey, rawBody: form });
      // Given time to reach its commit; one store holds it back until the keeper's is done.
      await until(() => events.includes('voice commit starts'), 1_500);
      release();
      const created = await voice;
      expect(created.status, created.text).toBeLessThan(300);
      await svc.service.batch.idle();
      expect(events).toEqual(['keeper commit starts', 'keeper commit ends', 'voice commit starts']);

      // Both published: the recording is served, and the voice's file is in the data dir.
      const id = submitted.json.data.transcriptionId as string;
      const recording = await fetch(`${svc.baseUrl}${API}/stt/transcriptions/${id}/audio`, { headers: { accessKey: a.accessKey } });
      expect(recording.status).toBe(200);
      const sha = createHash('sha256').update(voiceFile).digest('hex');
      expect(fs.existsSync(`${svc.dataDir}/recordings/${sha.slice(0, 2)}/${sha}`)).toBe(true);
    } finally {
      release();
      store.saveSessionRecording = saveSessionRecording;
      store.createVoice = createVoice;
    }
  });
});
