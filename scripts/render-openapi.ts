// Writes docs/api-reference.md from the API document (src/server/openapi). Run after changing a
// route or its rules: `npx tsx scripts/render-openapi.ts`; test/server/openapi.test.ts fails
// while the committed file differs from a fresh render.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { openApiDocument } from '../src/server/openapi/document.js';
import { renderMarkdown } from '../src/server/openapi/render.js';

export const REFERENCE_PATH = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'docs', 'api-reference.md');

fs.writeFileSync(REFERENCE_PATH, renderMarkdown(await openApiDocument()));
console.log(`wrote ${path.relative(process.cwd(), REFERENCE_PATH)}`);
