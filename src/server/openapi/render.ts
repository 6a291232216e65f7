// Markdown of the API document: docs/api-reference.md is this function's output for the
// document without a node's facts (scripts/render-openapi.ts writes it; a test checks that the
// committed file equals a fresh render). Pure.
import { ERRORS, type ErrorCode } from '../../core/errors.js';
import type { OpenApiDocument, Operation } from './document.js';
import type { JsonSchema } from './document-types.js';

const cell = (s: string) => s.replace(/\|/g, '\\|').replace(/\n/g, ' ');
const code = (s: string) => `\`${s}\``;

function typeOf(s: JsonSchema): string {
  if (s.const !== undefined) return code(JSON.stringify(s.const));
  if (Array.isArray(s.enum)) return (s.enum as unknown[]).map((v) => code(JSON.stringify(v))).join(', ');
  if (Array.isArray(s.type))
    return (s.type as string[]).map((t) => (t === 'array' && s.items ? `array of ${typeOf(s.items as JsonSchema)}` : t)).join(' or ');
  if (typeof s.type === 'string') {
    if (s.type === 'array' && s.items) return `array of ${typeOf(s.items as JsonSchema)}`;
    return s.type;
  }
  if (Array.isArray(s.anyOf)) return (s.anyOf as JsonSchema[]).map(typeOf).join(' or ');
  if (s.$ref) return String(s.$ref).split('/').pop()!;
  return 'any';
}

/** The schema's bounds in words, as the validators check them. */
function rules(s: JsonSchema): string {
  const out: string[] = [];
  const len = (min: unknown, max: unknown, unit: string) => {
    if (min !== undefined && max !== undefined) out.push(`${min} to ${max} ${unit}`);
    else if (max !== undefined) out.push(`at most ${max} ${unit}`);
    else if (min !== undefined) out.push(`at least ${min} ${unit}`);
  };
  len(s.minLength, s.maxLength, 'characters');
  len(s.minimum, s.maximum, '(inclusive)');
  len(s.minItems, s.maxItems, 'entries');
  if (s.uniqueItems) out.push('distinct');
  if (s.pattern === '\\S') out.push('not blank');
  else if (typeof s.pattern === 'string') out.push(`matches ${code(s.pattern)}`);
  if (Array.isArray(s.allOf))
    for (const sub of s.allOf as JsonSchema[]) if (typeof sub.pattern === 'string') out.push(`matches ${code(sub.pattern)}`);
  if (s.items && typeof s.items === 'object') {
    const inner = rules(s.items as JsonSchema);
    if (inner) out.push(`each: ${inner}`);
  }
  if (Array.isArray(s.anyOf))
    for (const sub of s.anyOf as JsonSchema[]) {
      const inner = rules(sub);
      if (inner) out.push(`${typeOf(sub)}: ${inner}`);
    }
  if (s.default !== undefined) out.push(`default ${code(JSON.stringify(s.default))}`);
  if (s.additionalProperties === false) out.push('unknown keys refused');
  if (typeof s.description === 'string') out.push(s.description);
  return out.join('; ');
}

function objectType(s: JsonSchema): boolean {
  return s.type === 'object' || (Array.isArray(s.type) && (s.type as string[]).includes('object'));
}

/** One row per field, nested objects and arrays of objects as dotted paths. */
function fieldRows(s: JsonSchema, prefix: string, rows: string[]): void {
  const props = (s.properties ?? {}) as Record<string, JsonSchema>;
  const required = (s.required ?? []) as string[];
  for (const [name, p] of Object.entries(props)) {
    const path = `${prefix}${name}`;
    rows.push(
      `| ${code(path)} | ${cell(typeOf(p))} | ${required.includes(name) ? 'yes' : ''} | ${cell(rules({ ...p, additionalProperties: undefined }))} |`,
    );
    if (objectType(p) && p.properties) fieldRows(p, `${path}.`, rows);
    const items = p.items as JsonSchema | undefined;
    if (items && objectType(items) && items.properties) fieldRows(items, `${path}[].`, rows);
  }
}

function fieldTable(s: JsonSchema, describe = false): string[] {
  const rows = ['| Field | Type | Required | Rule |', '|---|---|---|---|'];
  fieldRows(s, '', rows);
  const notes: string[] = [];
  if (s.additionalProperties === false) notes.push('Unknown keys are refused.');
  const opts = (s.properties as Record<string, JsonSchema> | undefined)?.options;
  if (opts?.additionalProperties === false) notes.push('Unknown keys in `options` are refused.');
  if (opts && Array.isArray(opts.allOf))
    notes.push('Not together: `includeAlignment` true with `suppressBackgroundSpeech` true; `entityCategories` with `rewriteInstruction`.');
  if (Array.isArray(s.anyOf))
    notes.push(`One of: ${(s.anyOf as JsonSchema[]).map((a) => (a.required as string[]).map(code).join(' + ')).join(', ')}.`);
  if (describe && typeof s.description === 'string' && rows.length > 2) notes.push(s.description);
  return rows.length > 2 ? [...rows, ...(notes.length > 0 ? ['', notes.join(' ')] : [])] : notes;
}

/** The `data` of an envelope answer (declared inline, or as an allOf), else the answer's own
 * schema. */
function envelopeData(schema: JsonSchema | undefined): JsonSchema | undefined {
  if (!schema) return undefined;
  if (Array.isArray(schema.allOf)) return ((schema.allOf as JsonSchema[])[1]!.properties as Record<string, JsonSchema>).data;
  const props = schema.properties as Record<string, JsonSchema> | undefined;
  if (props?.data && props.code && props.message) return props.data;
  return schema;
}

function renderOperation(method: string, path: string, op: Operation): string[] {
  const out = [
    `### ${method.toUpperCase()} ${code(path)}`,
    '',
    `${op.summary as string}.${op.description ? ` ${op.description as string}` : ''}`,
    '',
  ];
  const security = op.security as Record<string, unknown>[];
  const auth = security.length === 0 ? 'none' : security.map((s) => code(Object.keys(s)[0]!)).join(' or ');
  out.push(`Credential: ${auth}.`, '');
  const params = (op.parameters ?? []) as { name: string; in: string; required: boolean; schema: JsonSchema; description?: string }[];
  if (params.length > 0) {
    out.push('| Parameter | In | Required | Rule |', '|---|---|---|---|');
    for (const p of params)
      out.push(
        `| ${code(p.name)} | ${p.in} | ${p.required ? 'yes' : ''} | ${cell([typeOf(p.schema), rules(p.schema), p.description ?? ''].filter(Boolean).join('; '))} |`,
      );
    out.push('');
  }
  const body = op.requestBody as { required: boolean; content: Record<string, { schema: JsonSchema }> } | undefined;
  if (body) {
    const [type, { schema }] = Object.entries(body.content)[0]!;
    out.push(`Body (${code(type)}${body.required ? '' : ', optional'}):`, '', ...fieldTable(schema, true), '');
  }
  for (const [status, r] of Object.entries(op.responses)) {
    if (Number(status) >= 400) continue;
    const content = Object.entries(r.content ?? {});
    out.push(`Answer ${status}${content.length > 0 ? ` (${content.map(([t]) => code(t)).join(', ')})` : ''}: ${r.description}.`, '');
    const schema = content[0]?.[1].schema;
    const data = envelopeData(schema);
    if (data && data.properties) out.push(...fieldTable(data), '');
    else if (data && data.type === 'array' && (data.items as JsonSchema | undefined)?.properties)
      out.push('An array of:', '', ...fieldTable(data.items as JsonSchema), '');
  }
  const errors = op['x-scribed-errors'];
  if (errors.length === 0) {
    // An API facade: its errors are in its own API's shape (its route declares them).
    out.push('| HTTP | When |', '|---|---|');
    for (const [status, r] of Object.entries(op.responses)) if (Number(status) >= 400) out.push(`| ${status} | ${cell(r.description)} |`);
    out.push('');
    return out;
  }
  out.push('| Error | code | HTTP | When |', '|---|---|---|---|');
  for (const e of errors as ErrorCode[]) out.push(`| ${code(e)} | ${ERRORS[e].wire} | ${ERRORS[e].http} | ${cell(ERRORS[e].summary)} |`);
  out.push('');
  return out;
}

export function renderMarkdown(doc: OpenApiDocument): string {
  const out = [
    '# HTTP API reference',
    '',
    '<!-- Generated by `npx tsx scripts/render-openapi.ts` from src/server/openapi; test/server/openapi.test.ts fails when this file differs from a fresh render. Do not edit by hand. -->',
    '',
    "Every HTTP route scribed serves, with the rules its validators apply. A running node serves the same document as OpenAPI 3.1 at `GET /openapi.json` (with its recognizer's languages). The envelope, the error table and the decisions the contract leaves open: [api.md](api.md). The stream and watch sockets' frames and events: [protocol.md](protocol.md).",
    '',
    'Lengths count Unicode code points. `null` for an optional field means "not given". Failures are `{"code", "message": "<IDENTIFIER>: <detail>"}` (`/api/user`: `{"success": 0, "message"}`) with the HTTP status of the error table.',
    '',
  ];
  for (const { name } of doc.tags) {
    out.push(`## ${name}`, '');
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(ops)) if ((op.tags as string[])[0] === name) out.push(...renderOperation(method, path, op));
    }
  }
  return `${out
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trimEnd()}\n`;
}
