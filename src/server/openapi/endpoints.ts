// TRANSITIONAL: the hand-kept entries of the routes that do not yet declare their schema
// (route-schema.ts, docs/architecture.md "Adding a resource"): only the post-call categories
// are left. A new route declares its schema instead; test/server/openapi.test.ts names any
// route the app serves that the document lacks.
import type { Endpoint } from './endpoint.js';
import { ANALYTICS_ENDPOINTS } from './analytics.js';

export const ENDPOINTS: readonly Endpoint[] = [
  // ---------------------------------------------------------------- conversation analytics (openapi/analytics.ts)
  ...ANALYTICS_ENDPOINTS,
];
