// The console's side of the stream protocol (docs/protocol.md), pure (no DOM, no socket):
// what the page reads from its URL fragment, the audio frame header, and the capture buffer
// that keeps unacknowledged audio and places it by epoch and sampleOffset after every `ready`.
// The tests import this module in Node.

export const API = '/sound_clone/api/v1';
const SESSION_ID = /^rts_[A-Za-z0-9_-]{1,96}$/;
const TICKET = /^tkt_[A-Za-z0-9_-]{1,200}$/;

/** Messages of the ticket hand-off (docs/console.md, "When the socket drops"). */
export const NEED_TICKET = 'scribed-console:need-ticket';
export const TICKET_MESSAGE = 'scribed-console:ticket';

export const isSessionId = (v) => typeof v === 'string' && SESSION_ID.test(v);
export const isTicket = (v) => typeof v === 'string' && TICKET.test(v);

/** An absolute http(s) URL, or null: the fragment's links may not be javascript: or data:. */
function httpUrl(value, base) {
  if (typeof value !== 'string' || value === '') return null;
  try {
    const url = new URL(value, base);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url : null;
  } catch {
    return null;
  }
}

/**
 * The fragment `#session=rts_..&ticket=tkt_..[&mode=watch][&renew=URL][&origin=ORIGIN][&history=URL]`.
 * `mode=watch`: the page watches the session through the read-only watch socket (a supervisor
 * beside the client that streams it); otherwise it opens the session's stream socket and may
 * send audio itself.
 * `renew`: the embedding application's page that answers with a fresh ticket (opened in a
 * window, it posts the ticket back); `origin`: the one origin whose ticket messages the page
 * accepts and to which it announces a drop (default: renew's origin); `history`: a URL template
 * of the application's transcript downloads, with `{transcriptionId}` and `{format}`.
 * Unknown or malformed values are reported in `problems`, never used.
 */
export function parseFragment(hash, base) {
  const params = new URLSearchParams(String(hash).replace(/^#/, ''));
  const problems = [];
  const session = params.get('session');
  const ticket = params.get('ticket');
  const out = { session: null, ticket: null, watch: false, renew: null, origin: null, history: null, problems };
  if (isSessionId(session)) out.session = session;
  else problems.push(session ? 'the session id in the link is not a session id (rts_...)' : 'the link names no session');
  if (ticket !== null) {
    if (isTicket(ticket)) out.ticket = ticket;
    else problems.push('the ticket in the link is not a ticket (tkt_...)');
  }
  const mode = params.get('mode');
  if (mode === 'watch') out.watch = true;
  else if (mode !== null && mode !== 'stream') problems.push('mode is neither watch nor stream; the page streams');
  const renew = params.get('renew');
  if (renew !== null) {
    out.renew = httpUrl(renew, base);
    if (!out.renew) problems.push('renew is not an http(s) URL; ignored');
  }
  const origin = params.get('origin');
  if (origin !== null) {
    const url = httpUrl(origin, base);
    if (url) out.origin = url.origin;
    else problems.push('origin is not an http(s) origin; ignored');
  } else if (out.renew) {
    out.origin = out.renew.origin;
  }
  const history = params.get('history');
  if (history !== null) {
    if (httpUrl(history.replace(/\{(transcriptionId|format)\}/g, 'x'), base)) out.history = history;
    else problems.push('history is not an http(s) URL template; ignored');
  }
  return out;
}

/** The fragment without the ticket: what the address bar keeps once the page has read it, so
 * a reload or a copied link never replays a spent ticket. */
export function fragmentWithoutTicket(hash) {
  const params = new URLSearchParams(String(hash).replace(/^#/, ''));
  params.delete('ticket');
  const rest = params.toString();
  return rest === '' ? '' : `#${rest}`;
}

/** The stream socket's URL on this origin: streamUrl plus `?ticket=` (spec, tickets). */
export function streamSocketUrl(pageUrl, session, ticket) {
  const url = new URL(`${API}/stt/realtime/sessions/${encodeURIComponent(session)}/stream`, pageUrl);
  url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
  url.search = new URLSearchParams({ ticket }).toString();
  url.hash = '';
  return url.toString();
}

/** The watch socket's URL on this origin (docs/protocol.md, "Watching a session"). */
export function watchSocketUrl(pageUrl, session, ticket) {
  return streamSocketUrl(pageUrl, session, ticket).replace(/\/stream\?/, '/events?');
}

/** A transcript download link from the `history` template. */
export function historyLink(template, transcriptionId, format, base) {
  const filled = template
    .replace(/\{transcriptionId\}/g, encodeURIComponent(transcriptionId))
    .replace(/\{format\}/g, encodeURIComponent(format));
  return httpUrl(filled, base)?.toString() ?? null;
}

/** Audio frame: type 1, version 1, reserved 0, epoch (u32 LE), sampleOffset (u64 LE), payload. */
export function encodeFrame(epoch, sampleOffset, payload) {
  if (!Number.isSafeInteger(sampleOffset) || sampleOffset < 0) throw new RangeError('sampleOffset must be a safe non-negative integer');
  const out = new Uint8Array(16 + payload.length);
  const view = new DataView(out.buffer);
  view.setUint8(0, 1);
  view.setUint8(1, 1);
  view.setUint16(2, 0, true);
  view.setUint32(4, epoch, true);
  view.setUint32(8, sampleOffset % 2 ** 32, true);
  view.setUint32(12, Math.floor(sampleOffset / 2 ** 32), true);
  out.set(payload, 16);
  return out;
}

/**
 * Captured audio not yet acknowledged, by session-wide sample. The server's `ready` says where
 * it stands (epoch, sampleOffset in the epoch, capturedSamples session-wide), so a frame that
 * starts at session sample `s` goes out as `sampleOffset = s - (capturedSamples - sampleOffset)`
 * in that epoch; audio the server already holds is dropped, never sent twice.
 */
export class CaptureBuffer {
  /** @param {number} bytesPerSample @param {number} maxSamples bound of unacknowledged audio */
  constructor(bytesPerSample, maxSamples) {
    this.bytesPerSample = bytesPerSample;
    this.maxSamples = maxSamples;
    /** Session-wide index of the next captured sample (the client's capture cursor). */
    this.captured = null;
    /** @type {{start: number, bytes: Uint8Array}[]} */
    this.pending = [];
    /** Where the current epoch's sampleOffset 0 falls, session-wide; null when no socket is ready. */
    this.epochBase = null;
    this.epoch = null;
  }

  get pendingSamples() {
    return this.pending.reduce((n, f) => n + f.bytes.length / this.bytesPerSample, 0);
  }

  /** A `ready` event: returns the frames to send now (everything the server lacks). */
  ready(epoch, sampleOffset, capturedSamples) {
    const held = Number(capturedSamples);
    if (this.captured === null || this.captured < held) this.captured = held;
    this.epoch = epoch;
    this.epochBase = held - sampleOffset;
    this.dropBefore(held);
    return this.pending.map((f) => this.frame(f));
  }

  /** The socket is gone: nothing is sent until the next `ready`. */
  detached() {
    this.epochBase = null;
    this.epoch = null;
  }

  /** New audio from the capture; returns its frame when a socket is ready, else null. */
  add(bytes) {
    if (this.captured === null) throw new Error("no ready yet: the capture cursor starts at the server's");
    if (this.pendingSamples + bytes.length / this.bytesPerSample > this.maxSamples)
      throw new RangeError('unacknowledged audio is over the buffer bound');
    const f = { start: this.captured, bytes };
    this.captured += bytes.length / this.bytesPerSample;
    this.pending.push(f);
    return this.epochBase === null ? null : this.frame(f);
  }

  /** An `ack`: everything before capturedSamples is held by the server. */
  ack(capturedSamples) {
    this.dropBefore(Number(capturedSamples));
  }

  dropBefore(held) {
    while (this.pending.length > 0) {
      const f = this.pending[0];
      const n = f.bytes.length / this.bytesPerSample;
      if (f.start + n <= held) this.pending.shift();
      else {
        if (f.start < held) {
          this.pending[0] = { start: held, bytes: f.bytes.subarray((held - f.start) * this.bytesPerSample) };
        }
        break;
      }
    }
  }

  frame(f) {
    return encodeFrame(this.epoch, f.start - this.epochBase, f.bytes);
  }
}

/** A time point's session-wide milliseconds as m:ss.s */
export function clock(ms) {
  const t = Math.max(0, Number(ms) || 0) / 1000;
  const m = Math.floor(t / 60);
  const s = (t - m * 60).toFixed(1).padStart(4, '0');
  return `${m}:${s}`;
}

/** Words under this confidence are marked in finals (when the recognizer gives confidences). */
export const LOW_CONFIDENCE = 0.5;

/**
 * A final as the page shows it: its words, each with `low` (confidence under LOW_CONFIDENCE)
 * and its confidence, when the words spell the text; else the text as one unmarked run (text
 * options such as filler removal can make text and words differ).
 */
export function finalRuns(final) {
  const words = Array.isArray(final.words) ? final.words : null;
  if (!words || words.length === 0 || words.map((w) => w.word).join(' ') !== final.text) {
    return [{ text: String(final.text ?? ''), low: false, confidence: null }];
  }
  return words.map((w) => {
    const confidence = typeof w.confidence === 'number' ? w.confidence : null;
    return { text: w.word, low: confidence !== null && confidence < LOW_CONFIDENCE, confidence };
  });
}
