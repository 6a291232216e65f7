// A Fastify instance set up as the server validates and answers (src/server/app.ts: Ajv
// settings, the error handler, the plain serializer) for testing declared route schemas
// (src/server/schemas) without a node: the routes are registered with the handlers given.
import Fastify, {
  type FastifyBaseLogger,
  type FastifyInstance,
  type RawReplyDefaultExpression,
  type RawRequestDefaultExpression,
  type RawServerDefault,
} from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { installErrorHandling } from '../../src/server/error-handler.js';
import { AJV_OPTIONS, plainSerializerCompiler } from '../../src/server/openapi/route-schema.js';

export type TypedApp = FastifyInstance<
  RawServerDefault,
  RawRequestDefaultExpression,
  RawReplyDefaultExpression,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>;

export async function schemaApp(register: (app: TypedApp) => void): Promise<FastifyInstance> {
  const app = Fastify({ ajv: AJV_OPTIONS });
  installErrorHandling(app);
  app.setSerializerCompiler(plainSerializerCompiler);
  register(app.withTypeProvider<TypeBoxTypeProvider>());
  await app.ready();
  return app;
}

/** The failure message of a request, or 'accepted' with what the handler answered. */
export async function answer(
  app: FastifyInstance,
  method: 'POST' | 'PATCH' | 'PUT',
  url: string,
  body: unknown,
): Promise<{ status: number; message: string; data?: unknown }> {
  const res = await app.inject({ method, url, payload: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
  const json = res.json() as { message: string; data?: unknown };
  return { status: res.statusCode, message: json.message, data: json.data };
}
