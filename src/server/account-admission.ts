// One count of each account's sockets per node, shared by every route that opens a live session
// (the native stream socket and Deepgram's live socket), so two handshakes racing for an
// account's last place on different routes cannot both get in.
import { AccountStreams } from '../core/account-streams.js';
import type { AppContext } from './context.js';

const byContext = new WeakMap<AppContext, AccountStreams>();

export function accountStreamsOf(ctx: AppContext): AccountStreams {
  let streams = byContext.get(ctx);
  if (!streams) {
    streams = new AccountStreams();
    byContext.set(ctx, streams);
  }
  return streams;
}
