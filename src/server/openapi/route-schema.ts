// How a route declares itself once: its request and response shapes (TypeBox, i.e. JSON
// Schema) and what the document says of it. Fastify validates the request against the shapes
// (compiled once, when the route is registered), the TypeBox type provider types the handler
// from them, and @fastify/swagger writes them into the API document (swagger.ts). A failed
// validation is answered from the error table with the message the failing schema names
// (`x-invalid`, src/server/validation-errors.ts).
import { AjvCompiler } from '@fastify/ajv-compiler';
import type { FastifyServerOptions } from 'fastify';
import { Type, type TSchema } from 'typebox';
import type { ErrorCode } from '../../core/errors.js';
import { IDEMPOTENCY_KEY } from '../../core/idempotency.js';
import { requireIdempotencyKey } from '../../core/idempotency.js';

/** accessKey: the `accessKey` header; userGroupToken: `Authorization: Token <token>`;
 * socket: the `accessKey` header or a single-use `?ticket=`; none: open. */
export type Auth = 'accessKey' | 'userGroupToken' | 'socket' | 'none';

export const SECURITY: Record<Auth, Record<string, string[]>[]> = {
  accessKey: [{ accessKey: [] }],
  userGroupToken: [{ userGroupToken: [] }],
  socket: [{ accessKey: [] }, { ticket: [] }],
  none: [],
};

/** What a route says of itself beyond its shapes. */
export interface OperationInfo {
  operationId: string;
  tag: string;
  summary: string;
  description?: string;
  auth: Auth;
  /** What the handler refuses with; the answers every route of its kind gives (a credential,
   * a body, a path parameter) are added by the document (errorsOf). */
  errors: readonly ErrorCode[];
  /** The identifier a body or query that breaks its schema is refused with (default
   * VALIDATION_FAILED). */
  validationError?: ErrorCode;
  /** The route takes an Idempotency-Key header (checked before the body: idempotencyKeyFirst). */
  idempotencyKey?: 'required' | 'optional';
}

/** The keys of a Fastify route schema that carry the operation's description. */
export interface OperationKeys {
  operationId: string;
  tags: string[];
  summary: string;
  description?: string;
  security: Record<string, string[]>[];
  'x-scribed-auth': Auth;
  'x-scribed-errors': readonly ErrorCode[];
  'x-scribed-validation-error': ErrorCode;
  'x-scribed-idempotency-key'?: 'required' | 'optional';
}

export function operation(info: OperationInfo): OperationKeys {
  return {
    operationId: info.operationId,
    tags: [info.tag],
    summary: info.summary,
    ...(info.description ? { description: info.description } : {}),
    security: SECURITY[info.auth],
    'x-scribed-auth': info.auth,
    'x-scribed-errors': info.errors,
    'x-scribed-validation-error': info.validationError ?? 'VALIDATION_FAILED',
    ...(info.idempotencyKey ? { 'x-scribed-idempotency-key': info.idempotencyKey } : {}),
  };
}

/** `{code: 1, message, data}` (src/core/envelope.ts), the success answer of the native API. */
export function envelope<T extends TSchema>(data: T, description: string) {
  return Type.Object({ code: Type.Literal(1), message: Type.String(), data }, { description });
}

/** A path parameter as the router takes it (Fastify's maxParamLength is 100). */
export const PATH_PARAM = Type.String({ maxLength: 100 });

/** The message a value refused by this schema is answered with: `<field>: <message>`; or
 * one message per JSON Schema keyword, `default` for the others. */
export function invalid(message: string | Record<string, string>): { 'x-invalid': string | Record<string, string> } {
  return { 'x-invalid': message };
}

/** The field a refusal of this schema names instead of its path (a list's items answered as
 * the list), or `false`: the message alone. */
export function fieldNamed(name: string | false): { 'x-field': string | false } {
  return { 'x-field': name };
}

/** What an unknown key of this object is answered with: one message, or one per key
 * (`default` for the rest). */
export function unknownKey(message: string | Record<string, string>): { 'x-unknown': string | Record<string, string> } {
  return { 'x-unknown': message };
}

/** Rules JSON Schema can state but the route checks in code, because their refusal names a
 * field only code knows (which of two conditions came second) or answers with an identifier of
 * its own (a URL too long): the function next to the schema checks them, and the document
 * states them with the schema (`x-documented` is merged into it there, swagger.ts, at any
 * depth), so a client generating bodies from the document stays within them. */
export function documented(rules: Record<string, unknown>): { 'x-documented': Record<string, unknown> } {
  return { 'x-documented': rules };
}

/** A declared route as the server registers it when some of its parts are stated for the
 * document only: the handler checks them itself, because their refusals cannot come from a
 * schema without changing what clients see (a multipart body read as a stream, a query whose
 * values are strings, a header refused with an identifier of its own). The document keeps
 * them (document.ts registers the declaration whole). */
export function servedWithout<R extends RouteDeclaration, P extends 'body' | 'querystring' | 'headers'>(
  route: R,
  ...parts: P[]
): { method: R['method']; url: R['url']; schema: Omit<R['schema'], P> } {
  const schema: Record<string, unknown> = { ...route.schema };
  for (const p of parts) delete schema[p];
  return { method: route.method, url: route.url, schema: schema as Omit<R['schema'], P> };
}

/** The JSON body of a GET (Fastify refuses a body schema on a GET): the route checks it
 * itself, the document states it as the route's request body (swagger.ts). */
export function bodyOnGet(body: TSchema): { 'x-scribed-get-body': TSchema } {
  return { 'x-scribed-get-body': body };
}

/** The Idempotency-Key header, for the document (the handler reads it: a missing or malformed
 * key is refused with IDEMPOTENCY_KEY_REQUIRED, not as a schema failure). */
export function idempotencyKeyHeader(required: boolean) {
  const key = Type.String({
    pattern: IDEMPOTENCY_KEY.source,
    description:
      '16 to 64 printable ASCII characters; the same key and body answer with the first result (header idempotent-replayed: true)',
  });
  return Type.Object({ 'idempotency-key': required ? key : Type.Optional(key) });
}

/** One route as declared: what Fastify registers and @fastify/swagger documents. */
export interface RouteDeclaration {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE' | 'HEAD';
  url: string;
  schema: OperationKeys & {
    produces?: readonly string[];
    /** The body's media types for the document (default application/json). */
    consumes?: readonly string[];
    body?: TSchema;
    'x-scribed-get-body'?: TSchema;
    querystring?: TSchema;
    params?: TSchema;
    headers?: TSchema;
    response?: Record<number, TSchema>;
  };
}

/** A resource's routes; `batchOnly`: served only when the node runs batch transcription. */
export interface RouteTable {
  batchOnly?: boolean;
  routes: Record<string, RouteDeclaration>;
}

/** How Fastify's Ajv checks requests: as the API always has, a value of the wrong type is
 * refused, never coerced, defaults are documented but never written into the request, and an
 * unknown key is refused (where the schema closes its object), never silently dropped.
 * `verbose` hands the failing schema to the error mapping (validation-errors.ts); `x-invalid`,
 * `x-unknown`, `x-field`, `x-documented`, `x-empty-absent` and `x-recognizer-languages` (openapi/schemas.ts)
 * are its annotations. */
export const AJV_OPTIONS = {
  customOptions: {
    coerceTypes: false as const,
    useDefaults: false,
    removeAdditional: false as const,
    allErrors: false,
    verbose: true,
    keywords: ['x-invalid', 'x-unknown', 'x-field', 'x-documented', 'x-empty-absent', 'x-body-optional', 'x-recognizer-languages'],
  },
};

/** A query string is text: `?limit=20` arrives as the string "20". Its schema states what it
 * means (an integer from 1 to 100) and a value is coerced to that type before it is checked;
 * a body is JSON, whose types are the client's, and is never coerced. Fastify's own
 * compiler (@fastify/ajv-compiler, the one it uses by default) is built twice, once per
 * setting, and each request part goes to its own; a query schema marked `emptyAbsent()`
 * also reads an empty value (`?limit=`) as not given, as the hand parsers did. */
type PartValidator = ((data: unknown) => boolean) & { errors?: unknown };
type Compile = (route: { schema: Record<string, unknown>; httpPart?: string; method?: string; url?: string }) => PartValidator;

function withoutEmpties(validate: PartValidator, keys: true | readonly string[]): PartValidator {
  const out: PartValidator = (data) => {
    if (data && typeof data === 'object')
      for (const [k, v] of Object.entries(data as Record<string, unknown>))
        if (v === '' && (keys === true || keys.includes(k))) delete (data as Record<string, unknown>)[k];
    const ok = validate(data);
    out.errors = validate.errors;
    return ok;
  };
  return out;
}

export const SCHEMA_CONTROLLER: FastifyServerOptions['schemaController'] = {
  compilersFactory: {
    buildValidator: (externalSchemas: Record<string, unknown>, ajvOptions: unknown) => {
      const pool = AjvCompiler();
      const options = ajvOptions as typeof AJV_OPTIONS;
      const bodies = pool(externalSchemas as never, options) as unknown as Compile;
      const queries = pool(externalSchemas as never, {
        ...options,
        customOptions: { ...options.customOptions, coerceTypes: true },
      }) as unknown as Compile;
      return ((route: Parameters<Compile>[0]) => {
        if (route.httpPart === 'body' && route.schema['x-body-optional'] === true) {
          const validate = bodies(route);
          const out: PartValidator = (data) => {
            if (data === undefined) return true;
            const ok = validate(data);
            out.errors = validate.errors;
            return ok;
          };
          return out;
        }
        if (route.httpPart !== 'querystring') return bodies(route);
        const validate = queries(route);
        const empties = route.schema['x-empty-absent'] as true | string[] | undefined;
        return empties ? withoutEmpties(validate, empties) : validate;
      }) as never;
    },
  },
};

/** On a querystring schema: an empty value (`?from=`) is as if the parameter were not given;
 * for every parameter, or for those named. */
export const emptyAbsent = (keys: true | readonly string[] = true): { 'x-empty-absent': true | readonly string[] } => ({
  'x-empty-absent': keys,
});

/** On a body schema: no body at all is a body (the handler reads it as `{}`), as routes whose
 * every field is optional have always taken it. */
export const bodyOptional = (): { 'x-body-optional': true } => ({ 'x-body-optional': true });

/** A route's `preValidation`: the Idempotency-Key is checked before the body, as the handlers
 * always did (a request missing both is refused for the key). */
export async function idempotencyKeyFirst(req: { headers: Record<string, string | string[] | undefined> }): Promise<void> {
  const v = req.headers['idempotency-key'];
  requireIdempotencyKey(Array.isArray(v) ? v[0] : v);
}

/** Response schemas describe answers (the document, the handlers' types); they do not filter
 * or reshape them: answers are written with JSON.stringify, as for a route without one. */
export const plainSerializerCompiler = () => (data: unknown) => JSON.stringify(data);
