// The console's and the desk's pages (src/console/plugin.ts, src/desk/plugin.ts): static files,
// declared once here for the document. The plugins that serve them are a layer below the
// server and register the same paths (their own constants, imported here); the pages take no
// input to validate. test/server/openapi.test.ts fails if the two ever differ.
import { Type } from 'typebox';
import { CONSOLE_PATH } from '../../console/plugin.js';
import { DESK_LOGIN_PATH, DESK_PATH } from '../../desk/policy.js';
import { operation, PATH_PARAM, type RouteTable } from '../openapi/route-schema.js';

const FILE = Type.Object({ file: PATH_PARAM });
const ASSETS = ['text/javascript', 'text/css'];
const page = (description: string) => Type.String({ description });
const redirect = (to: string) => Type.Null({ description: `Moved Permanently to ${to}` });

function pages(tag: string, prefix: string, id: string, summary: string) {
  const at = prefix.replace(/\/$/, '');
  return {
    [`${id}Redirect`]: {
      method: 'GET',
      url: at,
      schema: {
        ...operation({ operationId: `${id}Redirect`, tag, auth: 'none', summary: `Redirects to ${prefix}`, errors: [] }),
        response: { 301: redirect(prefix) },
      },
    },
    [id]: {
      method: 'GET',
      url: prefix,
      schema: {
        ...operation({ operationId: id, tag, auth: 'none', summary, errors: [] }),
        produces: ['text/html'],
        response: { 200: page('the page') },
      },
    },
    [`${id}Asset`]: {
      method: 'GET',
      url: `${prefix}:file`,
      schema: {
        ...operation({ operationId: `${id}Asset`, tag, auth: 'none', summary: `The ${id}'s static files`, errors: ['NOT_FOUND'] }),
        params: FILE,
        produces: ASSETS,
        response: { 200: page('the file') },
      },
    },
  } as const satisfies RouteTable['routes'];
}

export const PAGE_ROUTES = {
  ...pages('Console', CONSOLE_PATH, 'console', 'The live transcript console (docs/console.md)'),
  ...pages('Desk', DESK_PATH, 'desk', 'The desk: search, read and hear calls, watch live ones (docs/desk.md)'),
  deskLoginPage: {
    method: 'GET',
    url: DESK_LOGIN_PATH,
    schema: {
      ...operation({
        operationId: 'deskLoginPage',
        tag: 'Desk',
        auth: 'none',
        summary: "A login link's page: it posts the link's token (the address's fragment) to deskLogin",
        errors: [],
      }),
      produces: ['text/html'],
      response: { 200: page('the page') },
    },
  },
} as const satisfies RouteTable['routes'];

export const PAGE_TABLE: RouteTable = { routes: PAGE_ROUTES };
