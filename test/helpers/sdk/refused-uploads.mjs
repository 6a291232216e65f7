// Run in a child process by test/server/facades/refused-uploads.test.ts: the official SDKs in
// a process of their own (as a client is), so the server's and the client's event loops do not
// take turns. Argument: JSON {sdk, baseUrl, goodKey, badKey, wav, rounds}. Prints one JSON
// line: what each refused upload was read as.
import fs from 'node:fs';
import OpenAI from 'openai';
import { createClient } from '@deepgram/sdk';

const a = JSON.parse(process.argv[2]);
const wav = fs.readFileSync(a.wav);
const out = [];

function described(err) {
  if (err instanceof OpenAI.AuthenticationError) return 'AuthenticationError';
  return `${err?.constructor?.name}: ${err?.message} ${err?.cause ? String(err.cause) : ''}`;
}

if (a.sdk === 'openai') {
  const client = new OpenAI({ apiKey: a.goodKey, baseURL: `${a.baseUrl}/v1`, maxRetries: 0 });
  for (let i = 0; i < a.rounds; i++) {
    // A cheap good request first, so the upload goes out on a kept-alive connection.
    await client.models.list();
    try {
      await client.audio.transcriptions.create(
        { file: await OpenAI.toFile(wav, 'call.wav'), model: 'whisper-1' },
        { headers: { Authorization: `Bearer ${a.badKey}` } },
      );
      out.push('accepted');
    } catch (err) {
      out.push(described(err));
    }
  }
  await client.models.list();
} else if (a.sdk === 'deepgram') {
  const dg = createClient(a.badKey, { global: { url: a.baseUrl } });
  for (let i = 0; i < a.rounds; i++) {
    const { error } = await dg.listen.prerecorded.transcribeFile(wav, {});
    out.push(error?.status ?? `${error?.constructor?.name}: ${error?.message}`);
  }
} else if (a.sdk === 'deepgram-refused') {
  // A good key and a refused request (an option scribed does not take): 400, read as such.
  const dg = createClient(a.goodKey, { global: { url: a.baseUrl } });
  for (let i = 0; i < a.rounds; i++) {
    const { error } = await dg.listen.prerecorded.transcribeFile(wav, { no_such_option: 'x' });
    out.push(error?.status ?? `${error?.constructor?.name}: ${error?.message}`);
  }
} else if (a.sdk === 'native') {
  for (let i = 0; i < a.rounds; i++) {
    const good = await fetch(`${a.baseUrl}/sound_clone/api/v1/account`, { headers: { accessKey: a.goodKey } });
    await good.arrayBuffer();
    const form = new FormData();
    form.append('file', new Blob([wav]), 'call.wav');
    try {
      const res = await fetch(`${a.baseUrl}/sound_clone/api/v1/stt/transcriptions`, {
        method: 'POST',
        headers: { accessKey: a.badKey },
        body: form,
      });
      const body = await res.json();
      out.push(`${res.status} ${String(body.message).split(':')[0]}`);
    } catch (err) {
      out.push(`${err.message}: ${String(err.cause)}`);
    }
  }
}
process.stdout.write(`${JSON.stringify(out)}\n`);
