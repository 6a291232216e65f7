// Voice design: placeholder until the design endpoints land.
import type { FastifyPluginAsync } from 'fastify';
import type { RecordingStore } from '../../store/recordings.js';
import type { AppContext } from '../context.js';

export function voiceDesignRoutes(_ctx: AppContext, _recordings: RecordingStore): FastifyPluginAsync {
  return async () => undefined;
}
