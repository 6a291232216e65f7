// The caller's account (routes/account.ts): the answer's shape, declared once.
import { Type } from 'typebox';
import { API } from '../context.js';
import { envelope, operation, type RouteTable } from '../openapi/route-schema.js';

const ACCOUNT_VIEW = Type.Object({
  accountId: Type.String(),
  name: Type.String(),
  characters: Type.String({ pattern: '^[0-9]+$', description: 'a 64-bit count as a decimal string' }),
});

export const ACCOUNT_ROUTES = {
  get: {
    method: 'GET',
    url: `${API}/account`,
    schema: {
      ...operation({
        operationId: 'getAccount',
        tag: 'Account',
        auth: 'accessKey',
        summary: "The caller's account and Characters balance",
        errors: [],
      }),
      response: { 200: envelope(ACCOUNT_VIEW, 'the account') },
    },
  },
} as const satisfies RouteTable['routes'];

export const ACCOUNT_TABLE: RouteTable = { routes: ACCOUNT_ROUTES };
