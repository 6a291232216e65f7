// The desk's own routes (routes/desk.ts, docs/desk.md): the shapes, declared once. They are
// the browser's, not an integration's: `auth: 'none'` in the table's terms (no key), each
// refusing without the desk's session cookie (UNAUTHORIZED) and, when it changes state,
// without this origin and the CSRF token. The desk's pages (src/desk/plugin.ts) are declared
// with the console's (schemas/pages.ts).
import { Type } from 'typebox';
import { envelope, fieldNamed, invalid, operation, PATH_PARAM, type RouteTable } from '../openapi/route-schema.js';
import { nullable, TIMESTAMP } from './shared.js';

export const DESK_API = '/desk/api';
const TAG = 'Desk';
const COOKIE = 'the desk session cookie (scribed_desk, set by deskLogin)';
const CSRF = `${COOKIE}, this server's Origin and the x-scribed-desk-csrf header (csrfToken of deskSession)`;
const TOKEN_REQUIRED = "the login link's token (dl_..., the link's fragment) is required";

const LIVE_SESSION = Type.Object({
  sessionId: Type.String(),
  transcriptionId: Type.String(),
  title: Type.String(),
  state: Type.Enum(['RECORDING', 'PAUSED']),
  callId: nullable(Type.String()),
  speaker: nullable(Type.String()),
  createdAt: TIMESTAMP,
});

export const DESK_ROUTES = {
  login: {
    method: 'POST',
    url: `${DESK_API}/login`,
    schema: {
      ...operation({
        operationId: 'deskLogin',
        tag: TAG,
        auth: 'none',
        summary: 'Redeem a login link (scribed accounts login-link) for a read-only desk session cookie',
        description:
          "Once per link, before it expires, from this server's own Origin. Sets scribed_desk (HttpOnly, SameSite=Strict, Path=/, Secure on https).",
        errors: ['UNAUTHORIZED', 'DESK_REQUEST_REFUSED'],
      }),
      // Any body without the token is refused for the token, whatever else is wrong with it.
      body: Type.Object(
        { token: Type.String({ pattern: '^dl_', description: "the login link's fragment", ...invalid(TOKEN_REQUIRED) }) },
        { ...invalid(TOKEN_REQUIRED), ...fieldNamed('token') },
      ),
      response: { 200: envelope(Type.Object({ accountId: Type.String(), expiresAt: TIMESTAMP }), 'signed in') },
    },
  },
  session: {
    method: 'GET',
    url: `${DESK_API}/session`,
    schema: {
      ...operation({
        operationId: 'deskSession',
        tag: TAG,
        auth: 'none',
        summary: `The desk session: its account, its CSRF token, when it ends. Needs ${COOKIE}`,
        errors: ['UNAUTHORIZED'],
      }),
      response: {
        200: envelope(
          Type.Object({
            accountId: Type.String(),
            accountName: nullable(Type.String()),
            csrfToken: Type.String(),
            expiresAt: TIMESTAMP,
            idleTimeoutSeconds: Type.Integer(),
          }),
          'the session',
        ),
      },
    },
  },
  logout: {
    method: 'POST',
    url: `${DESK_API}/logout`,
    schema: {
      ...operation({
        operationId: 'deskLogout',
        tag: TAG,
        auth: 'none',
        summary: `End the desk session. Needs ${CSRF}`,
        errors: ['UNAUTHORIZED', 'DESK_REQUEST_REFUSED'],
      }),
      response: { 200: envelope(Type.Object({ loggedOut: Type.Boolean() }), 'logged out; the cookie is cleared') },
    },
  },
  live: {
    method: 'GET',
    url: `${DESK_API}/live`,
    schema: {
      ...operation({
        operationId: 'deskLiveSessions',
        tag: TAG,
        auth: 'none',
        summary: `The account's sessions not closed yet, newest first (at most 200). Needs ${COOKIE}`,
        errors: ['UNAUTHORIZED'],
      }),
      response: { 200: envelope(Type.Object({ items: Type.Array(LIVE_SESSION) }), 'live sessions') },
    },
  },
  watchTicket: {
    method: 'POST',
    url: `${DESK_API}/sessions/:sessionId/watch-ticket`,
    schema: {
      ...operation({
        operationId: 'deskWatchTicket',
        tag: TAG,
        auth: 'none',
        summary: `A ticket for the session's watch socket. Needs ${CSRF}`,
        errors: ['UNAUTHORIZED', 'DESK_REQUEST_REFUSED', 'NOT_FOUND', 'SESSION_CLOSED'],
      }),
      params: Type.Object({ sessionId: PATH_PARAM }),
      response: {
        200: envelope(
          Type.Object({ sessionId: Type.String(), ticket: Type.String(), expiresInSeconds: Type.Integer(), watchUrl: Type.String() }),
          'open watchUrl with ?ticket=',
        ),
      },
    },
  },
} as const satisfies RouteTable['routes'];

export const DESK_TABLE: RouteTable = { routes: DESK_ROUTES };
