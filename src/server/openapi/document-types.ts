// The API document's shape as the server, the renderer and the tests read it.
import type { ErrorCode } from '../../core/errors.js';

/** A JSON Schema (2020-12, OpenAPI 3.1's dialect) as the document is read. */
export type JsonSchema = { [keyword: string]: unknown };

/** What the serving node adds to the document: facts of its recognizer. Absent (the rendered
 * reference), the schemas say only what every node accepts by shape. */
export interface ServerFacts {
  /** Primary language subtags the loaded models recognize (engine.info.languages). */
  recognizerLanguages?: readonly string[];
}

export interface DocumentOptions extends ServerFacts {
  /** Leave out the batch routes (a node without batch transcription does not serve them). */
  withoutBatch?: boolean;
}

export type OpenApiDocument = {
  openapi: string;
  info: Record<string, unknown>;
  tags: { name: string }[];
  paths: Record<string, Record<string, Operation>>;
  components: Record<string, unknown>;
};

export type Operation = Record<string, unknown> & {
  'x-scribed-errors': ErrorCode[];
  'x-scribed-validation-error'?: ErrorCode;
  responses: Record<string, { description: string; content?: Record<string, { schema?: JsonSchema }> }>;
};
