// `scribed drain`: drain a node and stop it, as SIGTERM does (docs/operations.md, "Draining a
// node"), through POST /admin/drain. The node answers only a loopback request made to it
// directly, so this runs on the node's own host, against its own port (not the balancer's).
// --wait: return once the process has stopped (its port refuses), for a deploy script's next
// step.
import type { CommandModule } from 'yargs';

interface DrainArgs {
  url: string;
  wait: boolean;
  'wait-timeout-ms': number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** True once nothing answers on the node's port any more. */
async function stopped(base: string): Promise<boolean> {
  try {
    await fetch(new URL('/healthz', base), { signal: AbortSignal.timeout(2_000) });
    return false;
  } catch {
    return true;
  }
}

export const drainCommand: CommandModule<object, DrainArgs> = {
  command: 'drain',
  describe: "drain this host's node (live calls move to other nodes), then stop it: what SIGTERM does",
  builder: (y) =>
    y
      .option('url', {
        type: 'string',
        default: 'http://127.0.0.1:8080',
        describe: "the node's own address on this host (not the balancer's)",
      })
      .option('wait', { type: 'boolean', default: false, describe: 'return once the node has stopped' })
      .option('wait-timeout-ms', { type: 'number', default: 2 * 3_600_000, describe: 'with --wait, give up (exit 1) after this long' }),
  handler: async (args) => {
    const base = args.url;
    let res: Response;
    try {
      res = await fetch(new URL('/admin/drain', base), { method: 'POST', signal: AbortSignal.timeout(10_000) });
    } catch (err) {
      throw new Error(`no node answers at ${base}: ${(err as Error).message}`);
    }
    const body = (await res.json().catch(() => null)) as { status?: string; graceMs?: number; message?: string } | null;
    if (res.status !== 202) throw new Error(`${base} refused the drain (${res.status}): ${body?.message ?? 'no message'}`);
    process.stdout.write(`${JSON.stringify({ url: base, status: body?.status, graceMs: body?.graceMs })}\n`);
    if (!args.wait) return;
    const until = Date.now() + args['wait-timeout-ms'];
    while (!(await stopped(base))) {
      if (Date.now() > until) throw new Error(`${base} still answers after ${args['wait-timeout-ms']} ms`);
      await sleep(500);
    }
    process.stdout.write(`${JSON.stringify({ url: base, status: 'stopped' })}\n`);
  },
};
