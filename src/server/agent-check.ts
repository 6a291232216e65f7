// HAProxy's agent check (`agent-check agent-port N` on a server line, deploy/haproxy.cfg): a
// plain TCP listener that answers every connection with the node's weight from its free
// recognizers (src/core/agent-check.ts) and closes it. Off unless --agent-port is given.
import net from 'node:net';
import type { Logger } from 'pino';
import { agentReply } from '../core/agent-check.js';
import { nodeCapacity } from './capacity.js';
import type { AppContext } from './context.js';

export interface AgentListener {
  port: number;
  close(): Promise<void>;
}

/** The reply to a check now. `stopping`: the node no longer takes calls; `draining`: it is
 * draining before it stops (`drain`); `readyAgain`: the previous process on its data dir
 * drained (`ready` undoes the drain HAProxy kept; src/server/drain.ts). */
export function agentAnswer(
  ctx: Pick<AppContext, 'engine' | 'sessions' | 'store'>,
  stopping: boolean,
  admin: { draining?: boolean; readyAgain?: boolean } = {},
): string {
  const c = nodeCapacity(ctx);
  return agentReply({
    decoders: c?.decoders ?? null,
    free: c ? c.decoders - c.busy + c.reclaimable : 0,
    canDefer: ctx.sessions.deferral?.budget.hasRoom() ?? false,
    serving: !stopping && ctx.store.isOpen() && ctx.engine.ready(),
    ...admin,
  });
}

export function startAgentListener(host: string, port: number, answer: () => string, log: Logger): Promise<AgentListener> {
  const server = net.createServer((socket) => {
    // HAProxy may send a line first (agent-send); the answer does not depend on it.
    socket.on('error', () => socket.destroy());
    socket.setTimeout(5_000, () => socket.destroy());
    socket.end(answer());
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      server.on('error', (err) => log.warn({ err }, 'agent check listener failed'));
      const bound = (server.address() as net.AddressInfo).port;
      log.info({ host, port: bound }, 'agent check listening (HAProxy weights from free recognizers)');
      resolve({ port: bound, close: () => new Promise((done) => server.close(() => done())) });
    });
  });
}
