// The call view's pure side (docs/console.md, "The call view"): what the page reads from its
// fragment and where a line goes on the call's time line. No DOM, no socket: the tests import
// this module in Node.
import { isSessionId, isTicket } from './protocol.js';

const CALL_ID = /^call_[A-Za-z0-9_-]{1,96}$/;
/** docs/calls.md: a speaker label; no `:` or `,`, so the legs list needs no escaping. */
const SPEAKER = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,31}$/;
/** A call holds at most 16 legs (docs/calls.md). */
export const MAX_LEGS = 16;

export const isCallId = (v) => typeof v === 'string' && CALL_ID.test(v);
export const isSpeaker = (v) => typeof v === 'string' && SPEAKER.test(v);

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
 * The fragment `#call=call_..&legs=SPEAKER:rts_..[:tkt_..],...[&renew=URL][&origin=ORIGIN][&history=URL]`.
 * Each leg is its speaker, its session and (until the page has used it) a ticket for the
 * session's watch socket; legs in the call's order (the merged transcript's order for lines
 * that start at the same millisecond). `renew` and `origin` as the live view's; `history` is a
 * URL template of the application's call transcript downloads, with `{callId}` and `{format}`.
 * Malformed legs and values are reported in `problems`, never used.
 */
export function parseCallFragment(hash, base) {
  const params = new URLSearchParams(String(hash).replace(/^#/, ''));
  const problems = [];
  const out = { call: null, legs: [], renew: null, origin: null, history: null, problems };
  const call = params.get('call');
  if (isCallId(call)) out.call = call;
  else problems.push(call ? 'the call id in the link is not a call id (call_...)' : 'the link names no call');
  const legs = params.get('legs');
  if (legs === null || legs === '') problems.push('the link names no legs');
  else {
    for (const item of legs.split(',')) {
      const [speaker, session, ticket, ...extra] = item.split(':');
      if (!isSpeaker(speaker) || !isSessionId(session) || extra.length > 0 || (ticket !== undefined && !isTicket(ticket))) {
        problems.push(`the leg "${item.slice(0, 80)}" is not speaker:rts_...[:tkt_...]; left out`);
      } else if (out.legs.some((l) => l.speaker === speaker || l.session === session)) {
        problems.push(`the leg ${speaker} is named twice; the first is kept`);
      } else if (out.legs.length >= MAX_LEGS) {
        problems.push(`a call has at most ${MAX_LEGS} legs; ${speaker} left out`);
      } else {
        out.legs.push({ speaker, session, ticket: ticket ?? null });
      }
    }
  }
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
    if (httpUrl(history.replace(/\{(callId|format)\}/g, 'x'), base)) out.history = history;
    else problems.push('history is not an http(s) URL template; ignored');
  }
  return out;
}

/** The fragment with every leg's ticket taken out: what the address bar keeps once the page
 * has read it (a reload or a copied link never replays a spent ticket). */
export function callFragmentWithoutTickets(hash) {
  const params = new URLSearchParams(String(hash).replace(/^#/, ''));
  const legs = params.get('legs');
  if (legs !== null) {
    params.set(
      'legs',
      legs
        .split(',')
        .map((item) =>
          item
            .split(':')
            .filter((part) => !isTicket(part))
            .join(':'),
        )
        .join(','),
    );
  }
  const rest = params.toString();
  return rest === '' ? '' : `#${rest}`;
}

/** The call transcript download link from the `history` template. */
export function callHistoryLink(template, callId, format, base) {
  const filled = template.replace(/\{callId\}/g, encodeURIComponent(callId)).replace(/\{format\}/g, encodeURIComponent(format));
  return httpUrl(filled, base)?.toString() ?? null;
}

/**
 * Where a line goes on the call's time line: lines are kept in order of start (ms on the leg's
 * own clock; the legs of a call start together, docs/calls.md), lines that start together in
 * the legs' order, and a line after those equal to it in both (a leg's own lines keep the
 * order they came in). The merged transcript orders its segments the same way.
 * @param {{startMs: number, leg: number}[]} lines in time-line order
 * @param {{startMs: number, leg: number}} line
 */
export function timelineIndex(lines, line) {
  let lo = 0;
  let hi = lines.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    const m = lines[mid];
    if (m.startMs < line.startMs || (m.startMs === line.startMs && m.leg <= line.leg)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
