// A validator for the answer an operation of a running node's API document (GET /openapi.json)
// documents, so a test can check a real answer against what the document says.
import { Ajv2020 } from 'ajv/dist/2020.js';

const ajv = new Ajv2020({ strict: false, validateFormats: false });

export async function documentedAnswer(
  baseUrl: string,
  path: string,
  method: string,
  status = '200',
  contentType = 'application/json',
): Promise<(value: unknown) => string | null> {
  const doc = (await (await fetch(`${baseUrl}/openapi.json`)).json()) as {
    paths: Record<string, Record<string, { responses: Record<string, { content?: Record<string, { schema: object }> }> }>>;
    components: object;
  };
  const schema = doc.paths[path]?.[method]?.responses[status]?.content?.[contentType]?.schema;
  if (!schema) throw new Error(`the document has no ${status} ${contentType} answer for ${method.toUpperCase()} ${path}`);
  const check = ajv.compile({ ...schema, components: doc.components });
  return (value) => (check(value) ? null : ajv.errorsText(check.errors));
}
