// What the server and its clients must agree on, defined once: the API's base path, the
// stream socket's close codes (docs/protocol.md) and segment ids. The typed event union
// (ServerEvent, with builders and a parser) is to follow here (issue 14).

/** Base path of the `/sound_clone/api/v1` family. */
export const API_BASE = '/sound_clone/api/v1';

/** WebSocket close codes of the stream socket (docs/protocol.md, "Close codes"). */
export const CLOSE_CODES = {
  normal: 1000,
  internal: 1011,
  serviceRestart: 1012,
  tryAgainLater: 1013,
  superseded: 4000,
  sessionClosed: 4001,
} as const;

/** A segment's id: `seg_<index>`, the index counting from 0 per session. */
export function segmentId(index: number): string {
  return `seg_${index}`;
}

/** The index of a segment id; null for anything that is not one. */
export function segmentIndex(id: string): number | null {
  const m = /^seg_(0|[1-9]\d*)$/.exec(id);
  return m ? Number(m[1]) : null;
}
