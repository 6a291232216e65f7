// The desk's pages (src/desk/plugin.ts, docs/desk.md) in the API document, spread into
// ENDPOINTS (endpoints.ts); its API routes declare theirs (src/server/schemas/desk.ts). The
// pages are served by src/desk, a layer below the server, so they stay here with the console's.
import type { Endpoint } from './endpoint.js';

export const DESK_ENDPOINTS: readonly Endpoint[] = [
  {
    method: 'get',
    path: '/desk',
    operationId: 'deskRedirect',
    tag: 'Desk',
    auth: 'none',
    summary: 'Redirects to /desk/',
    response: { kind: 'raw', status: 301, contentTypes: [], description: 'Moved Permanently to /desk/' },
    errors: [],
  },
  {
    method: 'get',
    path: '/desk/',
    operationId: 'desk',
    tag: 'Desk',
    auth: 'none',
    summary: 'The desk: search, read and hear calls, watch live ones (docs/desk.md)',
    response: { kind: 'raw', contentTypes: ['text/html'], description: 'the page' },
    errors: [],
  },
  {
    method: 'get',
    path: '/desk/login',
    operationId: 'deskLoginPage',
    tag: 'Desk',
    auth: 'none',
    summary: "A login link's page: it posts the link's token (the address's fragment) to deskLogin",
    response: { kind: 'raw', contentTypes: ['text/html'], description: 'the page' },
    errors: [],
  },
  {
    method: 'get',
    path: '/desk/{file}',
    operationId: 'deskAsset',
    tag: 'Desk',
    auth: 'none',
    summary: "The desk's static files",
    response: { kind: 'raw', contentTypes: ['text/javascript', 'text/css'], description: 'the file' },
    errors: ['NOT_FOUND'],
  },
];
