// The endpoint table: one entry per route the server registers (method and path as Fastify
// has them, `{param}` for `:param`). Adding a route means adding its entry here, nothing else;
// test/server/openapi.test.ts names any route the app serves that this table lacks, and any
// entry the app does not serve. Request schemas come from schemas.ts (the validators' own
// limits); error identifiers from the one table, src/core/errors.ts.
import type { Endpoint } from './endpoint.js';
import { ANALYTICS_ENDPOINTS } from './analytics.js';

export const ENDPOINTS: readonly Endpoint[] = [
  // ---------------------------------------------------------------- conversation analytics (openapi/analytics.ts)
  ...ANALYTICS_ENDPOINTS,
];
