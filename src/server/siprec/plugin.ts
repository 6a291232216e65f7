// The SIPREC recording server as part of `scribed serve` (docs/siprec.md): built with the app
// when SIPREC settings are given, listening when the service listens (service.ts calls
// siprecListen after the HTTP port is bound, so a SIP port in use fails the start), closed
// before the sessions shut down (its dialogs get a BYE and their legs their last finals).
import type { FastifyPluginAsync } from 'fastify';
import type { SessionRegistry } from '../../session/registry.js';
import type { AppContext } from '../context.js';
import { siprecMetrics } from './metrics.js';
import { SiprecRecorder } from './recorder.js';

// Keyed by the node's session registry: reachable from the app's context and from the service.
const byNode = new WeakMap<SessionRegistry, SiprecRecorder>();

export function siprecRoutes(ctx: AppContext): FastifyPluginAsync {
  return async (app) => {
    const settings = ctx.config.siprec;
    if (!settings) return;
    const recorder = new SiprecRecorder(ctx, settings, siprecMetrics(ctx.metrics.registry), app.log.child({ component: 'siprec' }));
    byNode.set(ctx.sessions, recorder);
    app.addHook('preClose', async () => {
      await recorder.close();
    });
  };
}

/** The node's recording server, when SIPREC is configured. */
export function siprecOf(node: { sessions: SessionRegistry }): SiprecRecorder | undefined {
  return byNode.get(node.sessions);
}

/** Binds the SIP port (UDP and TCP) when SIPREC is configured; answers the port, or null. */
export async function siprecListen(node: { sessions: SessionRegistry; log: { info(o: object, m: string): void } }): Promise<number | null> {
  const recorder = byNode.get(node.sessions);
  if (!recorder) return null;
  await recorder.listen();
  node.log.info({ sipPort: recorder.port, sipTlsPort: recorder.transport.portOf('tls') }, 'SIPREC recording server listening');
  return recorder.port;
}
