// The desk's routes (src/desk/plugin.ts, src/server/routes/desk.ts, docs/desk.md) in the API
// document, spread into ENDPOINTS (endpoints.ts). They are the browser's, not an integration's:
// `auth: 'none'` in the table's terms (no key), each refusing without the desk's session cookie
// (UNAUTHORIZED) and, when it changes state, without this origin and the CSRF token.
import type { Endpoint } from './endpoint.js';
import { nullable, object, type JsonSchema } from './json-schema.js';

const STRING: JsonSchema = { type: 'string' };
const TIMESTAMP: JsonSchema = { type: 'string', description: 'ISO 8601 UTC time' };
const COOKIE = 'the desk session cookie (scribed_desk, set by deskLogin)';
const CSRF = `${COOKIE}, this server's Origin and the x-scribed-desk-csrf header (csrfToken of deskSession)`;

const LIVE_SESSION: JsonSchema = object(
  {
    sessionId: STRING,
    transcriptionId: STRING,
    title: STRING,
    state: { type: 'string', enum: ['RECORDING', 'PAUSED'] },
    callId: nullable(STRING),
    speaker: nullable(STRING),
    createdAt: TIMESTAMP,
  },
  ['sessionId', 'transcriptionId', 'title', 'state', 'callId', 'speaker', 'createdAt'],
);

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
  {
    method: 'post',
    path: '/desk/api/login',
    operationId: 'deskLogin',
    tag: 'Desk',
    auth: 'none',
    summary: 'Redeem a login link (scribed accounts login-link) for a read-only desk session cookie',
    description:
      "Once per link, before it expires, from this server's own Origin. Sets scribed_desk (HttpOnly, SameSite=Strict, Path=/, Secure on https).",
    body: {
      contentType: 'application/json',
      required: true,
      schema: () => object({ token: { type: 'string', pattern: '^dl_', description: "the login link's fragment" } }, ['token']),
    },
    response: {
      kind: 'envelope',
      data: object({ accountId: STRING, expiresAt: TIMESTAMP }, ['accountId', 'expiresAt']),
      description: 'signed in',
    },
    errors: ['VALIDATION_FAILED', 'UNAUTHORIZED', 'DESK_REQUEST_REFUSED'],
  },
  {
    method: 'get',
    path: '/desk/api/session',
    operationId: 'deskSession',
    tag: 'Desk',
    auth: 'none',
    summary: `The desk session: its account, its CSRF token, when it ends. Needs ${COOKIE}`,
    response: {
      kind: 'envelope',
      data: object(
        {
          accountId: STRING,
          accountName: nullable(STRING),
          csrfToken: STRING,
          expiresAt: TIMESTAMP,
          idleTimeoutSeconds: { type: 'integer' },
        },
        ['accountId', 'accountName', 'csrfToken', 'expiresAt', 'idleTimeoutSeconds'],
      ),
      description: 'the session',
    },
    errors: ['UNAUTHORIZED'],
  },
  {
    method: 'post',
    path: '/desk/api/logout',
    operationId: 'deskLogout',
    tag: 'Desk',
    auth: 'none',
    summary: `End the desk session. Needs ${CSRF}`,
    response: {
      kind: 'envelope',
      data: object({ loggedOut: { type: 'boolean' } }, ['loggedOut']),
      description: 'logged out; the cookie is cleared',
    },
    errors: ['UNAUTHORIZED', 'DESK_REQUEST_REFUSED'],
  },
  {
    method: 'get',
    path: '/desk/api/live',
    operationId: 'deskLiveSessions',
    tag: 'Desk',
    auth: 'none',
    summary: `The account's sessions not closed yet, newest first (at most 200). Needs ${COOKIE}`,
    response: {
      kind: 'envelope',
      data: object({ items: { type: 'array', items: LIVE_SESSION } }, ['items']),
      description: 'live sessions',
    },
    errors: ['UNAUTHORIZED'],
  },
  {
    method: 'post',
    path: '/desk/api/sessions/{sessionId}/watch-ticket',
    operationId: 'deskWatchTicket',
    tag: 'Desk',
    auth: 'none',
    summary: `A ticket for the session's watch socket. Needs ${CSRF}`,
    response: {
      kind: 'envelope',
      data: object({ sessionId: STRING, ticket: STRING, expiresInSeconds: { type: 'integer' }, watchUrl: STRING }, [
        'sessionId',
        'ticket',
        'expiresInSeconds',
        'watchUrl',
      ]),
      description: 'open watchUrl with ?ticket=',
    },
    errors: ['UNAUTHORIZED', 'DESK_REQUEST_REFUSED', 'NOT_FOUND', 'SESSION_CLOSED'],
  },
];
