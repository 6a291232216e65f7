// Issue 14, "500s on bad input": every route the app serves (enumerated from the app itself,
// so a route added later is covered without touching this file) gets malformed requests:
// random JSON, deep nesting, wrong types, huge strings, bad or missing content types, broken
// multipart, invalid UTF-8, odd path parameters. Bad input is a client error, always: the
// status is under 500 and the answer is the envelope (the `/api/user` shape on its routes; on
// the API facades, the OpenAI or Deepgram error shape, docs/compat.md).
// Requests carry valid credentials so the bodies reach the parsers and validators behind
// authentication. fast-check with a fixed seed: the same cases every run, a few seconds.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fc from 'fast-check';
import type { FastifyInstance } from 'fastify';
import { startService, type TestService } from '../helpers/service.js';
import type { ProvisionedAccount } from '../../src/accounts/provision.js';

let svc: TestService;
let alice: ProvisionedAccount;

beforeAll(async () => {
  svc = await startService({ maxDecoders: 1 });
  alice = await svc.account(1_000n);
}, 60_000);
afterAll(async () => {
  await svc?.stop();
});

interface Route {
  method: string;
  path: string;
}

/** Every method and path the app routes, read from Fastify's own route tree. */
export function routesOf(app: FastifyInstance): Route[] {
  const routes: Route[] = [];
  const stack: string[] = [];
  for (const line of app.printRoutes({ commonPrefix: false }).split('\n')) {
    const m = /^([│ ]*)[├└]── (.*?)(?: \(([A-Z, ]+)\))?$/.exec(line);
    if (!m) continue;
    const depth = m[1]!.length / 4;
    stack.length = depth;
    stack[depth] = m[2]!;
    if (m[3]) for (const method of m[3].split(', ')) routes.push({ method, path: stack.join('') });
  }
  return routes;
}

/** The routes fuzzed: every one the app serves but the operator's drain (`POST /admin/drain`,
 * no body, loopback only), which would drain the service under test whatever it is sent; its
 * refusals are tested in test/server/drain.test.ts and test/process/drain-command.test.ts. */
function fuzzedRoutes(app: FastifyInstance): Route[] {
  return routesOf(app).filter((r) => !(r.method === 'POST' && r.path === '/admin/drain'));
}

interface Attempt {
  what: string;
  headers: Record<string, string>;
  payload?: string | Buffer;
  query?: string;
  param?: string;
}

const deep = (n: number, open: string, close: string, inner = '1') => open.repeat(n) + inner + close.repeat(n);
const boundary = 'XyZ';

/** Fixed hard cases, the ones each of the issue's examples names. */
function fixedAttempts(): Attempt[] {
  const json = { 'content-type': 'application/json' };
  const multipart = { 'content-type': `multipart/form-data; boundary=${boundary}` };
  return [
    { what: 'arrays nested 100k deep', headers: json, payload: deep(100_000, '[', ']') },
    { what: 'objects nested 10k deep', headers: json, payload: deep(10_000, '{"a":', '}') },
    {
      what: 'a nested value in a known field',
      headers: json,
      payload: `{"title":"t","options":${deep(5000, '{"x":', '}')},"name":${deep(5000, '[', ']')},"user_group_id":"g","brief":${deep(5000, '[', ']')}}`,
    },
    {
      what: 'deep properties on a valid-looking group',
      headers: json,
      payload: `{"name":"n","user_group_id":"deep-group","properties":${deep(20_000, '{"a":', '}')}}`,
    },
    {
      what: 'deep mapping on a valid-looking group',
      headers: json,
      payload: `{"name":"n","user_group_id":"deep-group-2","mapping":${deep(20_000, '[', ']')}}`,
    },
    { what: 'a 2 MB string', headers: json, payload: JSON.stringify({ title: 'x'.repeat(2_000_000) }) },
    { what: 'a 200 kB string', headers: json, payload: JSON.stringify({ title: 'x'.repeat(200_000), name: 'y'.repeat(200_000) }) },
    { what: 'truncated JSON', headers: json, payload: '{"title": "abc' },
    { what: 'invalid UTF-8 in JSON', headers: json, payload: Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]) },
    { what: '__proto__ pollution', headers: json, payload: '{"__proto__":{"x":1},"constructor":{"prototype":{"y":2}}}' },
    { what: 'text/plain body', headers: { 'content-type': 'text/plain' }, payload: 'hello' },
    { what: 'no content type with a body', headers: {}, payload: '{"a":1}' },
    { what: 'an unparsable content type', headers: { 'content-type': ';;;===' }, payload: '{}' },
    {
      what: 'multipart without a boundary',
      headers: { 'content-type': 'multipart/form-data' },
      payload: '--x\r\nContent-Disposition: form-data; name="file"\r\n\r\nabc\r\n--x--\r\n',
    },
    {
      what: 'multipart cut off mid-part',
      headers: multipart,
      payload: `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.wav"\r\nContent-Type: audio/wav\r\n\r\nRIFF....`,
    },
    { what: 'multipart with no parts', headers: multipart, payload: `--${boundary}--\r\n` },
    {
      what: 'multipart with a broken part header',
      headers: multipart,
      payload: `--${boundary}\r\nContent-Disposition\r\n\r\nabc\r\n--${boundary}--\r\n`,
    },
    { what: 'multipart that is not multipart', headers: multipart, payload: Buffer.from('\x00\x01\x02garbage'.repeat(50)) },
    {
      what: 'multipart with a deep options field',
      headers: multipart,
      payload: `--${boundary}\r\nContent-Disposition: form-data; name="options"\r\n\r\n${deep(20_000, '[', ']')}\r\n--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.wav"\r\n\r\nRIFF\r\n--${boundary}--\r\n`,
    },
    { what: 'an over-long path parameter', headers: json, payload: '{}', param: 'x'.repeat(5000) },
    { what: 'a credential-like path parameter', headers: json, payload: '{}', param: 'sk_0123456789abcdef_' + 'A'.repeat(43) },
    { what: 'a weird query', headers: json, payload: '{}', query: 'limit=-1&cursor=%ff%fe&format=exe&limit=2&modelId[]=1' },
  ];
}

/** Random malformed requests: JSON values of any shape, objects with the field names the
 * routes read holding values of the wrong type, and random bytes under random types. */
const fieldNames = [
  'title',
  'options',
  'languageHint',
  'capturedSamples',
  'name',
  'description',
  'previewText',
  'callbackUrl',
  'user_group_id',
  'current_token',
  'properties',
  'mapping',
  'brief',
  'quoteId',
  'planId',
  'sourceLanguage',
  'targets',
  'source',
  'designId',
  'files',
];
const randomAttempt: fc.Arbitrary<Attempt> = fc.oneof(
  fc
    .jsonValue({ maxDepth: 6 })
    .map((v) => ({ what: 'random JSON', headers: { 'content-type': 'application/json' }, payload: JSON.stringify(v) ?? 'null' })),
  fc
    .dictionary(
      fc.constantFrom(...fieldNames),
      fc.oneof(fc.jsonValue({ maxDepth: 3 }), fc.string({ maxLength: 3000 }), fc.integer(), fc.constant(null)),
      { maxKeys: 6 },
    )
    .map((o) => ({ what: 'known fields, wrong types', headers: { 'content-type': 'application/json' }, payload: JSON.stringify(o) })),
  fc
    .tuple(
      fc.constantFrom(
        'application/json',
        'application/x-www-form-urlencoded',
        'multipart/form-data; boundary=b',
        'application/octet-stream',
        'audio/wav',
        'text/html',
      ),
      fc.uint8Array({ maxLength: 2000 }),
    )
    .map(([type, bytes]) => ({ what: `random bytes as ${type}`, headers: { 'content-type': type }, payload: Buffer.from(bytes) })),
  fc.string({ maxLength: 60 }).map((param) => ({
    what: 'random path parameter',
    headers: { 'content-type': 'application/json' },
    payload: '{}',
    param: encodeURIComponent(param) || '_',
  })),
);

/** The API facades (docs/compat.md): they take the access key in their own APIs' header and
 * answer in their own APIs' error shapes, not the envelope. */
const FACADES: Record<string, 'openai' | 'deepgram' | 'assemblyai'> = {
  '/v1/audio/transcriptions': 'openai',
  '/v1/models': 'openai',
  '/v1/realtime': 'openai',
  '/v1/listen': 'deepgram',
  '/v2/upload': 'assemblyai',
  '/v2/transcript': 'assemblyai',
  '/v2/transcript/:transcript_id': 'assemblyai',
  '/v3/token': 'assemblyai',
  '/v3/ws': 'assemblyai',
};

/** The Authorization header each API's clients send the access key in. */
function facadeAuthorization(facade: 'openai' | 'deepgram' | 'assemblyai'): string {
  if (facade === 'openai') return `Bearer ${alice.accessKey}`;
  if (facade === 'deepgram') return `Token ${alice.accessKey}`;
  return alice.accessKey;
}

function requestFor(route: Route, a: Attempt) {
  const path = route.path.replace(/:[A-Za-z]+/g, () => a.param ?? 'x_01abcdefghjkmnpqrstvwx');
  const facade = FACADES[route.path];
  const authorization = facade === undefined ? `Token ${alice.apiToken}` : facadeAuthorization(facade);
  const auth = { accessKey: alice.accessKey, authorization, 'idempotency-key': 'fuzz-key-0123456789abcdef' };
  const body = route.method === 'GET' || route.method === 'HEAD' ? (route.path === '/api/user' ? a.payload : undefined) : a.payload;
  return {
    method: route.method as 'GET',
    url: `${path}${a.query ? `?${a.query}` : ''}`,
    headers: { ...auth, ...a.headers },
    payload: body,
  };
}

function checkAnswer(route: Route, a: Attempt, res: { statusCode: number; body: string; headers: Record<string, unknown> }) {
  const what = `${route.method} ${route.path} with ${a.what}: ${res.statusCode} ${res.body.slice(0, 300)}`;
  expect(res.statusCode, what).toBeLessThan(500);
  if (res.statusCode < 400 || route.method === 'HEAD') return;
  expect(String(res.headers['content-type']), what).toMatch(/^application\/json/);
  const body = JSON.parse(res.body) as Record<string, unknown>;
  const facade = FACADES[route.path];
  if (facade === 'openai') {
    expect(Object.keys(body), what).toEqual(['error']);
    expect(Object.keys(body.error as object).sort(), what).toEqual(['code', 'message', 'param', 'type']);
    return;
  }
  if (facade === 'deepgram') {
    expect(Object.keys(body).sort(), what).toEqual(['err_code', 'err_msg', 'request_id']);
    return;
  }
  if (facade === 'assemblyai') {
    expect(Object.keys(body), what).toEqual(['error']);
    expect(typeof body.error, what).toBe('string');
    return;
  }
  if (route.path === '/api/user') expect(Object.keys(body).sort(), what).toEqual(['message', 'success']);
  else expect(Object.keys(body).sort(), what).toEqual(['code', 'message']);
  expect(body.message, what).toMatch(/^[A-Z_]+: /);
}

describe('every route, malformed bodies', () => {
  it('finds the routes from the app (so new routes are fuzzed too)', () => {
    const routes = routesOf(svc.service.app);
    const keys = routes.map((r) => `${r.method} ${r.path}`);
    expect(keys).toContain('POST /sound_clone/api/v1/stt/realtime/sessions');
    expect(keys).toContain('POST /sound_clone/api/v1/stt/transcriptions');
    expect(keys).toContain('GET /api/user');
    expect(keys).toContain('GET /sound_clone/api/v1/stt/realtime/sessions/:sessionId/stream');
    expect(routes.length).toBeGreaterThan(30);
  });

  it('answers every fixed hard case on every route with a client error in the envelope', async () => {
    const failures: string[] = [];
    for (const route of fuzzedRoutes(svc.service.app)) {
      for (const a of fixedAttempts()) {
        try {
          checkAnswer(route, a, await svc.service.app.inject(requestFor(route, a)));
        } catch (err) {
          failures.push((err as Error).message.split('\n')[0]!);
        }
      }
    }
    expect(failures).toEqual([]);
  }, 60_000);

  it('answers random malformed requests on every route with a client error in the envelope', async () => {
    const routes = fuzzedRoutes(svc.service.app);
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...routes), randomAttempt, async (route, a) => {
        checkAnswer(route, a, await svc.service.app.inject(requestFor(route, a)));
      }),
      { seed: 14, numRuns: routes.length * 12 },
    );
  }, 60_000);
});
