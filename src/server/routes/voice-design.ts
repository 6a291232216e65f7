// Voice design: start a design, read it (with its callback delivery state), fetch its
// preview audio, and save it as a custom voice. The work runs in src/voices/design-jobs.ts, on
// whichever node holds the design's claim (docs/scaling.md). docs/api.md, Voice design.
import type { FastifyPluginAsync } from 'fastify';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { ok } from '../../core/envelope.js';
import { ScribedError } from '../../core/errors.js';
import { newId } from '../../core/ids.js';
import { callbackSecret } from '../../core/callback-signature.js';
import { describeToEspeak } from '../../core/voice-description.js';
import { validateVoiceName } from '../../core/voices.js';
import { openedBy, type OutboundPolicy } from '../../core/outbound-policy.js';
import { MAX_PENDING_DESIGNS_PER_ACCOUNT } from '../../voices/design-limits.js';
import type { VoiceDesignRecord } from '../../store/store.js';
import { accountOf } from '../auth.js';
import { API, callbackPolicy, type AppContext } from '../context.js';
import type { VoiceFiles } from '../voice-files.js';
import { MAX_CALLBACK_URL_CHARS, VOICE_DESIGN_ROUTES } from '../schemas/voice-design.js';

export function designView(d: VoiceDesignRecord) {
  return {
    designId: d.id,
    status: d.status,
    description: d.description,
    previewText: d.previewText,
    parameters: d.params,
    preview:
      d.status === 'COMPLETED' ? { url: `${API}/voices/design/${d.id}/preview`, format: 'wav' as const, fileSize: d.previewBytes } : null,
    error: d.error,
    // Delivered or failed, and how often it was tried: never what the target answered (status,
    // network error), which would let a caller probe what listens where (server log only).
    callback: d.callbackUrl
      ? { url: d.callbackUrl, state: d.callback.state, attempts: d.callback.attempts, nextAttemptAt: d.callback.nextAt }
      : null,
    createdAt: d.createdAt,
    updatedAt: d.updatedAt,
  };
}

/** The callbackUrl of a new design, normalised (`new URL`: `http://2130706433/` is
 * `http://127.0.0.1/`). A host that is by itself a destination the policy refuses (an IP
 * literal in a closed range, `localhost`, a metadata name) is 422 CALLBACK_URL_FORBIDDEN here;
 * names are resolved and checked only when a callback connects (src/outbound/guarded-transport.ts),
 * so a name that resolves somewhere closed ends FAILED like any unreachable receiver. */
function callbackUrl(v: unknown, policy: OutboundPolicy): string | null {
  if (v === undefined || v === null) return null;
  if (typeof v !== 'string' || v.length > MAX_CALLBACK_URL_CHARS)
    throw new ScribedError('VALIDATION_FAILED', 'callbackUrl: an http(s) URL');
  let url: URL;
  try {
    url = new URL(v);
  } catch {
    throw new ScribedError('VALIDATION_FAILED', 'callbackUrl: an http(s) URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new ScribedError('VALIDATION_FAILED', 'callbackUrl: an http(s) URL');
  if (url.username || url.password) throw new ScribedError('VALIDATION_FAILED', 'callbackUrl: credentials in the URL are not allowed');
  const verdict = policy.checkHost(url.hostname);
  if (verdict && !verdict.allowed)
    throw new ScribedError(
      'CALLBACK_URL_FORBIDDEN',
      `callbackUrl: ${url.hostname} (${verdict.class}) is not a destination callbacks may reach on this server; ${openedBy(verdict.class, url.hostname)}`,
    );
  return url.toString();
}

/** Registered inside voiceRoutes (voices.ts), whose onRequest hook authenticates every route. */
export function voiceDesignRoutes(ctx: AppContext, files: VoiceFiles): FastifyPluginAsync {
  return async (plain) => {
    const app = plain.withTypeProvider<TypeBoxTypeProvider>();
    const { recordings } = files;
    const serverKey = await files.keys.load('callback-signing');
    // The operator's callback destinations (docs/security.md): literal hosts are checked here
    // at create time, every resolved address when the design jobs connect.
    const policy = callbackPolicy(ctx);
    const jobs = ctx.workers.designs;

    const owned = async (designId: string, accountId: string) => {
      const d = await ctx.store.getVoiceDesign(designId, accountId);
      if (!d) throw new ScribedError('NOT_FOUND', `voice design ${designId} does not exist`);
      return d;
    };

    app.route({
      ...VOICE_DESIGN_ROUTES.create,
      // A body left out (or null) reads as {}: its refusal names the first field required.
      preValidation: async (req) => {
        if (req.body === undefined || req.body === null) req.body = {} as typeof req.body;
      },
      handler: async (req) => {
        const accountId = accountOf(req);
        const { description, previewText } = req.body;
        const url = callbackUrl(req.body.callbackUrl, policy);
        const now = ctx.now();
        const design = await ctx.store.createVoiceDesignIfRoom(
          {
            id: newId('vd', now),
            accountId,
            description,
            previewText,
            callbackUrl: url,
            params: describeToEspeak(description) as unknown as Record<string, unknown>,
            createdAt: now.toISOString(),
          },
          MAX_PENDING_DESIGNS_PER_ACCOUNT,
        );
        if (!design) {
          throw new ScribedError(
            'VOICE_DESIGN_QUEUE_FULL',
            `${MAX_PENDING_DESIGNS_PER_ACCOUNT} voice designs of this account are still PENDING; wait until one is COMPLETED or FAILED`,
          );
        }
        jobs.start(design.id);
        return ok({ designId: design.id, status: design.status, callbackSecret: url ? callbackSecret(serverKey, design.id) : null });
      },
    });

    app.route({
      ...VOICE_DESIGN_ROUTES.save,
      handler: async (req) => {
        const accountId = accountOf(req);
        // The schema checked the name is given; its length is checked here (schemas/voice-design.ts).
        const name = validateVoiceName(req.body.name);
        const { designId } = req.body;
        const d = await owned(designId, accountId);
        if (d.status !== 'COMPLETED') throw new ScribedError('VOICE_DESIGN_NOT_READY', `voice design ${designId} is ${d.status}`);
        const now = ctx.now();
        const out = await ctx.store.createVoice({
          id: newId('vc', now),
          accountId,
          name,
          type: 'designed',
          feature: 'text-to-speech',
          channel: 'web',
          designId,
          createdAt: now.toISOString(),
          recordings: [{ sha256: d.previewSha256!, format: 'wav', sizeBytes: d.previewBytes! }],
        });
        return ok({ id: out.voice.id });
      },
    });

    app.route({
      ...VOICE_DESIGN_ROUTES.get,
      handler: async (req) => {
        const accountId = accountOf(req);
        return ok(designView(await owned(req.params.designId, accountId)));
      },
    });

    app.route({
      ...VOICE_DESIGN_ROUTES.preview,
      handler: async (req, reply) => {
        const accountId = accountOf(req);
        const d = await owned(req.params.designId, accountId);
        if (d.status !== 'COMPLETED' || !d.previewSha256)
          throw new ScribedError('VOICE_DESIGN_NOT_READY', `voice design ${d.id} is ${d.status}`);
        const wav = await recordings.read(d.previewSha256);
        if (!wav) throw new Error(`the preview of voice design ${d.id} is not stored`);
        return reply.type('audio/wav').send(wav);
      },
    });
  };
}
