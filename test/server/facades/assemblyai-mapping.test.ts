// The AssemblyAI facade's pure parts: the create body to a native batch request (every
// parameter acting, ignored, an off-switch or refused by name), the upload URL's id, the
// webhook's URL and header, and the callback envelope the delivery worker opens.
import { describe, expect, it } from 'vitest';
import { OutboundPolicy } from '../../../src/core/outbound-policy.js';
import { mapTranscriptBody } from '../../../src/server/facades/assemblyai/params.js';
import { uploadIdOf } from '../../../src/server/facades/assemblyai/uploads.js';
import { webhookUrl } from '../../../src/server/facades/assemblyai/webhook.js';
import { callbackEnvelope, openCallbackPayload } from '../../../src/webhooks/delivery-worker.js';

const URL_ = 'http://127.0.0.1:8080/v2/upload/0123456789abcdef0123456789abcdef';
const refusal = (body: unknown) => {
  try {
    mapTranscriptBody(body);
  } catch (err) {
    return (err as Error & { status: number }).status === 400 ? (err as Error).message : `status ${(err as { status: number }).status}`;
  }
  return 'accepted';
};

describe('mapTranscriptBody', () => {
  it("defaults as AssemblyAI's: readable text, fillers removed, no channels, no redaction", () => {
    const r = mapTranscriptBody({ audio_url: URL_ });
    expect(JSON.parse(r.nativeFields.options!)).toEqual({ readableText: true, removeDisfluencies: true });
    expect(r.nativeFields.title).toBe('AssemblyAI transcription');
    expect(r.webhook).toBeNull();
  });

  it('maps the acting parameters', () => {
    const r = mapTranscriptBody({
      audio_url: URL_,
      punctuate: false,
      format_text: false,
      disfluencies: true,
      language_code: 'en_us',
      speaker_labels: true,
      speakers_expected: 2,
      redact_pii: true,
      redact_pii_policies: ['credit_card_number', 'credit_card_cvv', 'phone_number', 'number_sequence'],
      redact_pii_sub: 'entity_name',
      word_boost: ['dashwood'],
      keyterms_prompt: ['leisure', 'dashwood'],
      webhook_url: 'https://hooks.example.com/aai',
      webhook_auth_header_name: 'X-Secret',
      webhook_auth_header_value: 'v',
    });
    expect(JSON.parse(r.nativeFields.options!)).toEqual({
      vocabularyHints: ['dashwood', 'leisure'],
      multichannel: true,
      channelSpeakers: ['A', 'B'],
      redact: ['pci', 'phone', 'numbers'],
    });
    expect(r.nativeFields.languageHint).toBe('en');
    expect(r.webhook).toEqual({ url: 'https://hooks.example.com/aai', header: { name: 'X-Secret', value: 'v' } });
  });

  it('accepts ignored parameters and off-switches sent false; refuses the rest by name', () => {
    expect(
      refusal({ audio_url: URL_, speech_model: 'best', temperature: 0.2, summarization: false, entity_detection: null, topics: [] }),
    ).toBe('accepted');
    expect(refusal({ audio_url: URL_, summarization: true })).toMatch(/^summarization: not supported by scribed/);
    expect(refusal({ audio_url: URL_, audio_start_from: 1000 })).toMatch(/^audio_start_from: not supported/);
    expect(refusal({ audio_url: URL_, bogus: 1 })).toMatch(/^bogus: unknown or unsupported parameter/);
    expect(refusal({})).toMatch(/^audio_url: required/);
    expect(refusal({ audio_url: URL_, redact_pii: true })).toMatch(/^redact_pii_policies: required/);
    expect(refusal({ audio_url: URL_, redact_pii: true, redact_pii_policies: ['person_name'] })).toMatch(
      /^redact_pii_policies: "person_name"/,
    );
    expect(refusal({ audio_url: URL_, redact_pii: true, redact_pii_policies: ['phone_number'], redact_pii_sub: 'hash' })).toMatch(
      /^redact_pii_sub:/,
    );
    expect(refusal({ audio_url: URL_, speakers_expected: 3, speaker_labels: true })).toMatch(/^speakers_expected:/);
    expect(refusal({ audio_url: URL_, punctuate: 'yes' })).toMatch(/^punctuate: must be a boolean/);
    expect(
      refusal({
        audio_url: URL_,
        webhook_url: 'https://h.example.com',
        webhook_auth_header_name: 'Content-Type',
        webhook_auth_header_value: 'x',
      }),
    ).toMatch(/^webhook_auth_header_name: Content-Type is set by the delivery/);
    expect(
      refusal({
        audio_url: URL_,
        webhook_url: 'https://h.example.com',
        webhook_auth_header_name: 'X-A',
        webhook_auth_header_value: 'a\r\nb',
      }),
    ).toMatch(/^webhook_auth_header_value:/);
    expect(refusal({ audio_url: URL_, webhook_auth_header_name: 'X-A', webhook_auth_header_value: 'a' })).toMatch(
      /applies with webhook_url/,
    );
  });
});

describe('upload URLs and webhook URLs', () => {
  it('reads the upload id from the path only', () => {
    expect(uploadIdOf(URL_)).toBe('0123456789abcdef0123456789abcdef');
    expect(uploadIdOf('https://other.example/v2/upload/0123456789abcdef0123456789abcdef')).toBe('0123456789abcdef0123456789abcdef');
    expect(uploadIdOf('https://example.com/call.wav')).toBeNull();
    expect(uploadIdOf('http://127.0.0.1/v2/upload/../../etc/passwd')).toBeNull();
    expect(uploadIdOf('file:///v2/upload/0123456789abcdef0123456789abcdef')).toBeNull();
  });

  it('refuses a webhook to a closed destination, allows a listed one', () => {
    const closed = new OutboundPolicy({ allowPrivate: false, allowCidrs: [] });
    expect(() => webhookUrl('http://127.0.0.1:9/x', closed)).toThrow(/^webhook_url: 127.0.0.1 \(loopback\) is not a destination/);
    expect(() => webhookUrl('ftp://example.com/x', closed)).toThrow(/^webhook_url: an http\(s\) URL/);
    const open = new OutboundPolicy({ allowPrivate: false, allowCidrs: ['127.0.0.1/32'] });
    expect(webhookUrl('http://127.0.0.1:9/x', open)).toBe('http://127.0.0.1:9/x');
  });

  it('the callback envelope carries the header beside the body; a plain body is sent as stored', () => {
    const body = JSON.stringify({ transcript_id: 'stt_1', status: 'completed' });
    expect(openCallbackPayload(callbackEnvelope(body, { 'X-Secret': 'v' }))).toEqual({ body, headers: { 'X-Secret': 'v' } });
    expect(openCallbackPayload(body)).toEqual({ body, headers: {} });
    expect(openCallbackPayload('not json')).toEqual({ body: 'not json', headers: {} });
  });
});
