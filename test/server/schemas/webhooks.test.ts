// Webhook endpoint bodies (src/server/schemas/webhooks.ts; docs/webhooks.md) through Fastify's
// validation and the server's error handling: refused in the same words as the hand validation
// gave, the URL checked in code after the shape (WEBHOOK_URL_TOO_LONG, WEBHOOK_URL_FORBIDDEN),
// events without repeats.
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OutboundPolicy } from '../../../src/core/outbound-policy.js';
import { endpointChange, endpointFromBody, WEBHOOK_ROUTES } from '../../../src/server/schemas/webhooks.js';
import { answer, schemaApp } from '../../helpers/schema-app.js';

let app: FastifyInstance;
const policy = new OutboundPolicy({ allowPrivate: false, allowCidrs: [] });
const PATCH_URL = WEBHOOK_ROUTES.update.url.replace(':id', 'whe_x');

beforeAll(async () => {
  app = await schemaApp((typed) => {
    typed.route({
      ...WEBHOOK_ROUTES.create,
      handler: async (req) => ({ code: 1 as const, message: 'success', data: endpointFromBody(req.body, policy) as never }),
    });
    typed.route({
      ...WEBHOOK_ROUTES.update,
      handler: async (req) => ({ code: 1 as const, message: 'success', data: endpointChange(req.body, policy) as never }),
    });
  });
});
afterAll(async () => {
  await app?.close();
});

describe('a webhook endpoint body', () => {
  it('is taken with its defaults, the URL normalised and events without repeats', async () => {
    const r = await answer(app, 'POST', WEBHOOK_ROUTES.create.url, {
      url: 'https://example.com/hook',
      events: ['call.completed', 'call.completed'],
    });
    expect(r.data).toEqual({ url: 'https://example.com/hook', events: ['call.completed'], description: null, includeTranscript: false });
    expect((await answer(app, 'PATCH', PATCH_URL, { enabled: true, description: null })).data).toEqual({
      enabled: true,
      description: null,
    });
  });

  it('is refused in the words the hand validation used', async () => {
    const events =
      'a non-empty list of transcription.completed, transcription.failed, call.completed, session.paused, session.expired, alert.triggered';
    const cases: [unknown, string][] = [
      [[], 'VALIDATION_FAILED: the body must be a JSON object'],
      [{ events: ['call.completed'] }, 'VALIDATION_FAILED: url: an http(s) URL'],
      [{ url: 5, events: ['call.completed'] }, 'VALIDATION_FAILED: url: an http(s) URL'],
      [{ url: 'not a url', events: ['call.completed'] }, 'VALIDATION_FAILED: url: an http(s) URL'],
      [{ url: 'ftp://example.com/', events: ['call.completed'] }, 'VALIDATION_FAILED: url: an http(s) URL'],
      [{ url: 'https://u:p@example.com/', events: ['call.completed'] }, 'VALIDATION_FAILED: url: credentials in the URL are not allowed'],
      [
        { url: `https://example.com/${'a'.repeat(2100)}`, events: ['call.completed'] },
        'WEBHOOK_URL_TOO_LONG: url: at most 2048 characters',
      ],
      [{ url: 'https://example.com/', events: [] }, `VALIDATION_FAILED: events: ${events}`],
      [{ url: 'https://example.com/' }, `VALIDATION_FAILED: events: ${events}`],
      [{ url: 'https://example.com/', events: ['call.completed', 'nope'] }, `VALIDATION_FAILED: events: ${events}`],
      [
        { url: 'https://example.com/', events: ['call.completed'], description: 'x'.repeat(501) },
        'VALIDATION_FAILED: description: a string of at most 500 characters',
      ],
      [
        { url: 'https://example.com/', events: ['call.completed'], includeTranscript: 'yes' },
        'VALIDATION_FAILED: includeTranscript: true or false',
      ],
      [{ url: 'https://example.com/', events: ['call.completed'], enabled: true }, 'VALIDATION_FAILED: enabled: set it with PATCH'],
      [{ url: 'https://example.com/', events: ['call.completed'], colour: 'red' }, 'VALIDATION_FAILED: colour: unknown field'],
    ];
    for (const [body, message] of cases) {
      const r = await answer(app, 'POST', WEBHOOK_ROUTES.create.url, body);
      expect([r.status, r.message], JSON.stringify(body).slice(0, 80)).toEqual([422, message]);
    }
    expect((await answer(app, 'PATCH', PATCH_URL, { enabled: 'no' })).message).toBe('VALIDATION_FAILED: enabled: true or false');
    expect((await answer(app, 'PATCH', PATCH_URL, { url: 'http://127.0.0.1/hook' })).message).toMatch(
      /^WEBHOOK_URL_FORBIDDEN: url: 127\.0\.0\.1 /,
    );
  });
});
