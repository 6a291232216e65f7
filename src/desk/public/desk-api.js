// The desk's requests (docs/desk.md). The session is an httpOnly cookie the page never sees;
// requests that change state carry the session's CSRF token in a header. Reads go to the
// native API (the cookie opens a fixed list of its GETs) and to /desk/api/.
export const API = '/sound_clone/api/v1/stt';
export const DESK_API = '/desk/api';
const CSRF_HEADER = 'x-scribed-desk-csrf';

/** Thrown for an answer that is not `code: 1`; `status` 401 means the session has ended. */
export class DeskError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

let csrfToken = null;

async function envelope(res) {
  let body = null;
  try {
    body = await res.json();
  } catch {
    throw new DeskError(res.status, `the server answered ${res.status}`);
  }
  if (!res.ok || body.code !== 1) throw new DeskError(res.status, body.message ?? `the server answered ${res.status}`);
  return body.data;
}

export async function getJson(path) {
  return envelope(await fetch(path, { credentials: 'same-origin', headers: { accept: 'application/json' } }));
}

/** A download route (not enveloped when it succeeds). */
export async function getDocument(path) {
  const res = await fetch(path, { credentials: 'same-origin' });
  if (!res.ok) return envelope(res);
  return res.json();
}

export async function post(path, body) {
  const headers = { 'content-type': 'application/json' };
  if (csrfToken) headers[CSRF_HEADER] = csrfToken;
  return envelope(await fetch(path, { method: 'POST', credentials: 'same-origin', headers, body: JSON.stringify(body ?? {}) }));
}

/** Who is signed in; remembers the CSRF token for later state changes. */
export async function loadSession() {
  const s = await getJson(`${DESK_API}/session`);
  csrfToken = s.csrfToken;
  return s;
}

export const logout = () => post(`${DESK_API}/logout`);
export const liveSessions = () => getJson(`${DESK_API}/live`);
export const watchTicket = (sessionId) => post(`${DESK_API}/sessions/${encodeURIComponent(sessionId)}/watch-ticket`);

/** GET .../stt/search with the filters set (docs/search.md). */
export function search(filters, cursor) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(filters)) if (v !== undefined && v !== null && v !== '') q.set(k, v);
  if (cursor) q.set('cursor', cursor);
  return getJson(`${API}/search?${q}`);
}

export const transcriptionOf = (id) => getJson(`${API}/transcriptions/${encodeURIComponent(id)}`);
export const transcriptOf = (id) => getDocument(`${API}/transcriptions/${encodeURIComponent(id)}/transcript?format=json`);
export const callOf = (id) => getJson(`${API}/calls/${encodeURIComponent(id)}`);
export const callAnalyticsOf = (id) => getJson(`${API}/calls/${encodeURIComponent(id)}/analytics`);

/** An agent's figures over a range (from/to ISO, either may be empty: the API's default week). */
export function agentAnalytics(agentId, from, to) {
  const q = new URLSearchParams();
  if (from) q.set('from', from);
  if (to) q.set('to', to);
  return getJson(`${API}/agents/${encodeURIComponent(agentId)}/analytics?${q}`);
}
export const callTranscriptOf = (id) => getDocument(`${API}/calls/${encodeURIComponent(id)}/transcript?format=json`);

/** The recording's address: one transcription's audio; a call's two legs as one stereo file,
 * or, for a call of one leg or more than two, its first leg's (the recordings route mixes
 * exactly two). */
export function recordingUrl(kind, id, legs = []) {
  if (kind !== 'call') return `${API}/transcriptions/${encodeURIComponent(id)}/audio`;
  const leg = legs.length === 2 || legs.length === 0 ? 'stereo' : legs[0];
  return `${API}/calls/${encodeURIComponent(id)}/audio?leg=${encodeURIComponent(leg)}`;
}
