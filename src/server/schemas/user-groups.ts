// Dashboard user groups at /api/user (routes/user-groups.ts, docs/api.md): the request and
// response shapes, declared once. These routes answer `{success, ...}`, not the v1 envelope,
// and their failures `{success: 0, message}` (the plugin's error handler). Get User sends its
// body on a GET, which Fastify neither parses nor validates: the route reads it and checks it
// against the same schema before its handler (preValidation). A body left out (or null) on get and update
// reads as `{}`, so its refusal names the missing id, as it always has.
import { Type, type Static } from 'typebox';
import { ScribedError } from '../../core/errors.js';
import { ENVIRONMENTS, MAX_GROUP_ID_CHARS, type UserGroupRequest } from '../../core/user-groups.js';
import { bodyOnGet, documented, fieldNamed, invalid, operation, type RouteTable } from '../openapi/route-schema.js';

const PATH = '/api/user';
const TAG = 'Dashboard user groups';
const OBJECT_MESSAGE = 'body must be a JSON object';

const groupId = Type.Union([Type.String({ minLength: 1, maxLength: MAX_GROUP_ID_CHARS, pattern: '\\S' }), Type.Null()], {
  ...invalid(`1 to ${MAX_GROUP_ID_CHARS} characters`),
});
const objectOrNull = (description: string) =>
  Type.Union([Type.Object({}), Type.Null()], { description, ...invalid('must be a JSON object or null') });

export const USER_GROUP_BODY = Type.Object(
  {
    name: Type.Optional(groupId),
    user_group_id: Type.Optional(groupId),
    mapping: Type.Optional(objectOrNull('schema id to data source')),
    properties: Type.Optional(objectOrNull('variables for dashboards and the SQL editor')),
    environment: Type.Optional(Type.Union([Type.Enum([...ENVIRONMENTS]), Type.Null()], invalid('Customer, Testing or null'))),
  },
  {
    additionalProperties: false,
    description: 'user_group_id identifies the group; when it is absent, name does',
    // Checked by userGroupRequest, after the fields themselves, as it always was.
    ...documented({
      anyOf: [
        { required: ['user_group_id'], properties: { user_group_id: { type: 'string' } } },
        { required: ['name'], properties: { name: { type: 'string' } } },
      ],
    }),
    ...invalid(OBJECT_MESSAGE),
    ...fieldNamed(false),
  },
);

const required = Type.String({ minLength: 1, ...invalid('required') });
export const USER_GROUP_DELETE_BODY = Type.Object(
  { user_group_id: required, current_token: required },
  { ...invalid(OBJECT_MESSAGE), ...fieldNamed(false) },
);

const USER_GROUP = {
  team_id: Type.Integer(),
  token: Type.String({ pattern: '^ugt_' }),
  name: Type.Union([Type.String(), Type.Null()]),
  provided_id: Type.String(),
  properties: Type.Union([Type.Object({}), Type.Null()]),
};
const GET_USER_VIEW = Type.Object(
  { success: Type.Literal(1), new_user_group: Type.Boolean(), user_group: Type.Object(USER_GROUP) },
  { description: 'the group; new_user_group when it was created' },
);
const PUT_USER_VIEW = Type.Object(
  {
    success: Type.Literal(1),
    user_group: Type.Object({
      ...USER_GROUP,
      is_new: Type.Union([Type.Literal(0), Type.Literal(1)]),
      environment: Type.Union([Type.Enum([...ENVIRONMENTS]), Type.Null()]),
    }),
  },
  { description: 'the group; is_new 1 when it was created' },
);

const op = (operationId: string, summary: string, errors: Parameters<typeof operation>[0]['errors']) =>
  operation({ operationId, tag: TAG, auth: 'userGroupToken', summary, errors });

export const USER_GROUP_ROUTES = {
  get: {
    method: 'GET',
    url: PATH,
    schema: {
      ...op('getUserGroup', 'Get or create a user group (JSON body on a GET, as the dashboard sends it)', []),
      ...bodyOnGet(USER_GROUP_BODY),
      response: { 200: GET_USER_VIEW },
    },
  },
  head: {
    method: 'HEAD',
    url: PATH,
    schema: op('headUserGroup', 'Refused: GET creates a missing group', ['METHOD_NOT_ALLOWED']),
  },
  update: {
    method: 'PUT',
    url: PATH,
    schema: {
      ...op('updateUserGroup', 'Update a user group (created when missing)', []),
      body: USER_GROUP_BODY,
      response: { 200: PUT_USER_VIEW },
    },
  },
  delete: {
    method: 'DELETE',
    url: PATH,
    schema: {
      ...op('deleteUserGroup', 'Delete a user group, confirming its current token', ['NOT_FOUND', 'USER_GROUP_TOKEN_MISMATCH']),
      body: USER_GROUP_DELETE_BODY,
      response: { 200: Type.Object({ success: Type.Literal(1) }, { description: 'deleted' }) },
    },
  },
} as const satisfies RouteTable['routes'];

export const USER_GROUP_TABLE: RouteTable = { routes: USER_GROUP_ROUTES };

/** The group a get or update body names, and the fields it sets (its shape already checked). */
export function userGroupRequest(body: Static<typeof USER_GROUP_BODY>): UserGroupRequest {
  const { user_group_id, name, mapping, properties, environment } = body;
  const providedId = user_group_id ?? name;
  if (!providedId) throw new ScribedError('VALIDATION_FAILED', 'user_group_id (or name) is required to identify the group');
  const fields: UserGroupRequest['fields'] = {};
  if (name !== undefined) fields.name = name;
  if (mapping !== undefined) fields.mapping = mapping as Record<string, unknown> | null;
  if (properties !== undefined) fields.properties = properties as Record<string, unknown> | null;
  if (environment !== undefined) fields.environment = environment;
  return { providedId, fields };
}
