// TRANSITIONAL: the hand-kept entries of the routes that do not yet declare their schema
// (route-schema.ts, docs/architecture.md "Adding a resource"): none are left (the post-call
// categories were the last, src/server/schemas/categories.ts); the list stays, empty, for the
// bridge until it is removed. A new route declares its schema instead;
// test/server/openapi.test.ts names any route the app serves that the document lacks.
import type { Endpoint } from './endpoint.js';

export const ENDPOINTS: readonly Endpoint[] = [];
