// SIGHUP: the settings that can change without a restart, read again (docs/operations.md,
// "Changing settings without a restart"). Today that is the callback allow-list: the CIDRs of
// --callback-allow-cidr-file, on top of the fixed ones of the flags and the environment (a
// signal cannot re-read a process's environment, so a file is what changes). A list that cannot
// be read or holds an invalid entry changes nothing: the previous one stays, and the log says why.
import type { Logger } from 'pino';
import { callbackAllowCidrsNow, type ServiceConfig } from '../config.js';
import type { OutboundPolicy } from '../core/outbound-policy.js';

export interface AllowListReload {
  allowCidrs: readonly string[];
  added: string[];
  removed: string[];
}

/** Read the allow-list again into the node's one policy; null (and an error logged) when the
 * new list was refused and the old one kept. */
export function reloadCallbackAllowList(config: Readonly<ServiceConfig>, policy: OutboundPolicy, log: Logger): AllowListReload | null {
  if (config.callbackAllowCidrFile === undefined) {
    log.info(
      { allowCidrs: policy.allowCidrs },
      'SIGHUP: no --callback-allow-cidr-file to read again; the callback allow-list is unchanged',
    );
    return { allowCidrs: policy.allowCidrs, added: [], removed: [] };
  }
  const before = policy.allowCidrs;
  try {
    const next = callbackAllowCidrsNow(config);
    policy.replace({ allowPrivate: config.callbackAllowPrivate, allowCidrs: next });
    const added = next.filter((c) => !before.includes(c));
    const removed = before.filter((c) => !next.includes(c));
    log.info(
      { file: config.callbackAllowCidrFile, allowCidrs: next, added, removed },
      added.length + removed.length > 0 ? 'SIGHUP: callback allow-list changed' : 'SIGHUP: callback allow-list read again, unchanged',
    );
    return { allowCidrs: next, added, removed };
  } catch (err) {
    log.error(
      { file: config.callbackAllowCidrFile, error: (err as Error).message, kept: before },
      'SIGHUP: callback allow-list refused; the previous one stays in force',
    );
    return null;
  }
}
