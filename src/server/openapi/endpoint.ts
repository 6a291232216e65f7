// TRANSITIONAL: what one entry of the hand-kept endpoint table (endpoints.ts) says about a
// route not yet declared (route-schema.ts). bridge.ts turns the table into OpenAPI 3.1; the common answers (UNAUTHORIZED with a credential, BAD_REQUEST and
// PAYLOAD_TOO_LARGE with a JSON body, URI_TOO_LONG with a path parameter, INTERNAL) are added
// there, so an entry lists only what its handler itself refuses.
import type { ErrorCode } from '../../core/errors.js';
import type { ServerFacts } from './document-types.js';
import type { JsonSchema } from './json-schema.js';

export type Method = 'get' | 'post' | 'put' | 'patch' | 'delete' | 'head';

/** accessKey: the `accessKey` header; userGroupToken: `Authorization: Token <token>`;
 * socket: the `accessKey` header or a single-use `?ticket=`; none: open. */
export type Auth = 'accessKey' | 'userGroupToken' | 'socket' | 'none';

export interface Parameter {
  schema: JsonSchema;
  description: string;
  required?: boolean;
}

/** `{code: 1, message, data}` (src/core/envelope.ts). */
export type SuccessResponse = { kind: 'envelope'; data: JsonSchema; description: string; status?: 200 | 201 };

export interface Endpoint {
  method: Method;
  /** OpenAPI form: `{param}` for a path parameter. */
  path: string;
  operationId: string;
  tag: string;
  summary: string;
  description?: string;
  auth: Auth;
  idempotencyKey?: 'required' | 'optional';
  query?: Record<string, Parameter>;
  body?: {
    contentType: 'application/json' | 'multipart/form-data';
    schema: (facts: ServerFacts) => JsonSchema;
    required: boolean;
  };
  /** The identifier a body or query that breaks its schema is refused with (default
   * VALIDATION_FAILED). */
  validationError?: ErrorCode;
  response: SuccessResponse;
  /** What the handler refuses with, beyond the common answers. */
  errors: readonly ErrorCode[];
  /** Served only when the node runs batch transcription (buildApp registers batchRoutes). */
  batchOnly?: boolean;
}
