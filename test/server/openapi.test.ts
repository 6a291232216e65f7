// The API document cannot drift from the routes: every route the app registers is in it and
// every documented operation is served (the failure names each one missing, and where to add
// it); the document is valid OpenAPI 3.1; GET /openapi.json serves it without a credential;
// docs/api-reference.md is a fresh render of it. Request rules: openapi-requests.test.ts.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import SwaggerParser from '@apidevtools/swagger-parser';
import type { FastifyInstance } from 'fastify';
import { startService, type TestService } from '../helpers/service.js';
import { openApiDocument, type OpenApiDocument } from '../../src/server/openapi/document.js';
import { renderMarkdown } from '../../src/server/openapi/render.js';
import { ERRORS } from '../../src/core/errors.js';
import { LANGUAGE_TAG } from '../../src/core/session-options.js';
import { LANGUAGE_SUBTAGS } from '../../src/server/openapi/schemas.js';

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

let svc: TestService;

beforeAll(async () => {
  svc = await startService({ maxDecoders: 1 });
}, 60_000);
afterAll(async () => {
  await svc?.stop();
});

/** `METHOD /path/{param}` for every method and path Fastify routes, read from its route tree. */
export function registeredRoutes(app: FastifyInstance): string[] {
  const routes: string[] = [];
  const stack: string[] = [];
  for (const line of app.printRoutes({ commonPrefix: false }).split('\n')) {
    const m = /^([│ ]*)[├└]── (.*?)(?: \(([A-Z, ]+)\))?$/.exec(line);
    if (!m) continue;
    const depth = m[1]!.length / 4;
    stack.length = depth;
    stack[depth] = m[2]!;
    const openApiPath = stack.join('').replace(/:(\w+)/g, '{$1}');
    if (m[3]) for (const method of m[3].split(', ')) routes.push(`${method} ${openApiPath}`);
  }
  return routes;
}

function documentedOperations(doc: OpenApiDocument): string[] {
  return Object.entries(doc.paths).flatMap(([p, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${p}`));
}

/** Registered routes the document lacks. Fastify answers HEAD for every GET; a documented GET
 * covers it unless the route's HEAD is its own (then it is documented as a head operation). */
function undocumented(registered: string[], doc: OpenApiDocument): string[] {
  const documented = new Set(documentedOperations(doc));
  return registered.filter((r) => !documented.has(r) && !(r.startsWith('HEAD ') && documented.has(r.replace(/^HEAD /, 'GET '))));
}

describe('the document and the routes', () => {
  it('documents every route the app registers, and every documented operation is served', async () => {
    const doc = await openApiDocument();
    const registered = registeredRoutes(svc.service.app);
    expect(registered.length).toBeGreaterThan(30);
    const missing = undocumented(registered, doc);
    const unserved = documentedOperations(doc).filter((op) => !registered.includes(op));
    expect(
      missing,
      `routes the app serves that the document lacks (declare the route's schema, src/server/schemas/, then run npx tsx scripts/render-openapi.ts): ${missing.join(', ')}`,
    ).toEqual([]);
    expect(unserved, `operations the document lists that the app does not serve: ${unserved.join(', ')}`).toEqual([]);
  });

  it('names exactly the route a table lacks', async () => {
    const doc = await openApiDocument();
    const extra = 'POST /sound_clone/api/v1/stt/realtime/sessions/{sessionId}/not-a-route';
    expect(undocumented([...documentedOperations(doc), 'HEAD /healthz', extra], doc)).toEqual([extra]);
    expect(undocumented(['HEAD /sound_clone/api/v1/voices/{id}'], doc)).toEqual(['HEAD /sound_clone/api/v1/voices/{id}']);
  });

  it('lists only identifiers of the error table, each answer under its status with its wire code', async () => {
    const doc = await openApiDocument();
    for (const [p, ops] of Object.entries(doc.paths)) {
      for (const [m, op] of Object.entries(ops)) {
        for (const code of op['x-scribed-errors']) {
          expect(Object.hasOwn(ERRORS, code), `${m} ${p}: ${code}`).toBe(true);
          const answer = op.responses[String(ERRORS[code].http)];
          expect(answer?.description, `${m} ${p}: ${code} under ${ERRORS[code].http}`).toContain(`${code}:`);
        }
      }
    }
  });
});

describe('the document is valid OpenAPI 3.1', () => {
  it('as rendered (no node facts) and as a node serves it', async () => {
    for (const doc of [await openApiDocument(), await openApiDocument({ recognizerLanguages: ['en', 'de'], withoutBatch: true })]) {
      const copy = structuredClone(doc);
      await expect(SwaggerParser.validate(copy as never)).resolves.toBeTruthy();
      expect(doc.openapi).toBe('3.1.0');
    }
  });

  it('an invalid document is refused by the validator (the check can fail)', async () => {
    const broken = structuredClone(await openApiDocument()) as unknown as {
      paths: Record<string, Record<string, Record<string, unknown>>>;
    };
    delete (broken as unknown as { info?: unknown }).info;
    (broken.paths['/healthz']!.get! as Record<string, unknown>).parameters = [{ name: 'x' }];
    await expect(SwaggerParser.validate(broken as never)).rejects.toThrow();
  });
});

describe('GET /openapi.json', () => {
  it("is served without a credential, with this node's recognizer languages on languageHint", async () => {
    const res = await fetch(`${svc.baseUrl}/openapi.json`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    const served = (await res.json()) as OpenApiDocument;
    await expect(SwaggerParser.validate(structuredClone(served) as never)).resolves.toBeTruthy();
    const languages = svc.service.engine.info.languages as string[];
    expect(served).toEqual(JSON.parse(JSON.stringify(await openApiDocument({ recognizerLanguages: languages }))));
    const body = served.paths['/sound_clone/api/v1/stt/realtime/sessions']!.post!.requestBody as {
      content: Record<string, { schema: { properties: Record<string, { pattern: string }> } }>;
    };
    const hint = new RegExp(body.content['application/json']!.schema.properties.languageHint!.pattern);
    expect(hint.test(`${languages[0]!.toUpperCase()}-GB`)).toBe(true);
    expect(hint.test('xx-GB')).toBe(languages.includes('xx'));
    // The served pattern is the validator's language tag with the primary subtag narrowed.
    expect(LANGUAGE_TAG.source.endsWith(`${LANGUAGE_SUBTAGS}$`)).toBe(true);
  });
});

describe('docs/api-reference.md', () => {
  it('equals a fresh render (run npx tsx scripts/render-openapi.ts after changing a route)', async () => {
    const committed = fs.readFileSync(path.join(root, 'docs', 'api-reference.md'), 'utf8');
    expect(
      committed === renderMarkdown(await openApiDocument()),
      'docs/api-reference.md is stale: run npx tsx scripts/render-openapi.ts',
    ).toBe(true);
  });

  it('names every documented operation', async () => {
    const md = renderMarkdown(await openApiDocument());
    for (const op of documentedOperations(await openApiDocument())) {
      const [method, p] = op.split(' ');
      expect(md, op).toContain(`### ${method} \`${p}\``);
    }
  });
});
