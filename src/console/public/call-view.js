// scribed call view (docs/console.md, "The call view"). Opened as
// /console/call.html#call=call_..&legs=agent:rts_..:tkt_..,customer:rts_..:tkt_..: one read-only
// watch socket per leg (docs/protocol.md, "Watching a session"), each with its own ticket, and
// every leg's partials and finals on one time line, each line with its speaker. Like the live
// view it holds no access key: the tickets travel in the fragment, which the browser never
// sends to a server, and are taken out of the address bar at once.
//
// A leg whose socket drops asks for a fresh ticket through the live view's hand-off (a message
// to the embedding page, the application's `renew` window, or a pasted ticket), per leg, with
// `mode=watch`: a watcher resumes nothing. The other legs go on meanwhile.
/* global window, document, location, history */
import { NEED_TICKET, TICKET_MESSAGE, clock, isTicket, watchSocketUrl } from './protocol.js';
import { callFragmentWithoutTickets, callHistoryLink, parseCallFragment, timelineIndex } from './call.js';

const $ = (id) => document.getElementById(id);
const MAX_EVENTS = 200;
/** Colours in call.css (speaker-0 ... speaker-7); a call with more legs reuses them, and its
 * lines still name their speakers. */
const COLOURS = 8;

const fragment = parseCallFragment(location.hash, location.href);
history.replaceState(null, '', `${location.pathname}${location.search}${callFragmentWithoutTickets(location.hash)}`);

/** The time line as shown: one entry per line of `#timeline`, in its order. */
const timeline = [];
const legs = fragment.legs.map((l, index) => ({
  index,
  speaker: l.speaker,
  session: l.session,
  ws: null,
  opened: false,
  closedBySession: false,
  watching: null,
  partial: null,
  renewWindow: null,
  el: null,
}));

// ------------------------------------------------------------------ display

function showAlert(text) {
  const el = $('alert');
  el.textContent = text;
  el.hidden = !text;
}

function logEvent(text, kind = 'info') {
  const li = document.createElement('li');
  li.className = kind;
  li.textContent = `${new Date().toLocaleTimeString()} ${text}`;
  const list = $('events');
  list.prepend(li);
  while (list.children.length > MAX_EVENTS) list.lastElementChild.remove();
}

const colour = (leg) => `speaker-${leg.index % COLOURS}`;

function legCard(leg) {
  const li = document.createElement('li');
  li.className = `leg ${colour(leg)}`;
  li.dataset.speaker = leg.speaker;
  const head = document.createElement('div');
  head.className = 'leg-head';
  const name = document.createElement('span');
  name.className = 'speaker';
  name.id = `leg-${leg.index}-name`;
  name.textContent = leg.speaker;
  const state = document.createElement('p');
  state.className = 'badge';
  state.id = `leg-${leg.index}-state`;
  state.setAttribute('role', 'status');
  state.setAttribute('aria-live', 'polite');
  state.setAttribute('aria-label', `${leg.speaker}: connection`);
  head.append(name, state);
  const session = document.createElement('p');
  session.className = 'session';
  session.textContent = leg.session;

  const panel = document.createElement('div');
  panel.className = 'leg-ticket';
  panel.hidden = true;
  const why = document.createElement('p');
  const renewLine = document.createElement('p');
  const renew = document.createElement('button');
  renew.type = 'button';
  renew.id = `leg-${leg.index}-renew`;
  renew.textContent = `Get a fresh ticket for ${leg.speaker}`;
  renew.addEventListener('click', () => openRenew(leg));
  renewLine.append(renew);
  const form = document.createElement('form');
  const label = document.createElement('label');
  label.htmlFor = `leg-${leg.index}-ticket`;
  label.textContent = `Or paste a ticket for ${leg.speaker}`;
  const row = document.createElement('div');
  row.className = 'row';
  const input = document.createElement('input');
  Object.assign(input, {
    id: `leg-${leg.index}-ticket`,
    name: 'ticket',
    type: 'text',
    autocomplete: 'off',
    spellcheck: false,
    placeholder: 'tkt_...',
  });
  input.pattern = 'tkt_[A-Za-z0-9_\\-]+';
  const submit = document.createElement('button');
  submit.type = 'submit';
  submit.textContent = `Connect ${leg.speaker}`;
  row.append(input, submit);
  form.append(label, row);
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const value = input.value.trim();
    if (!isTicket(value)) {
      showAlert('That is not a ticket (tickets start with tkt_).');
      return;
    }
    input.value = '';
    connect(leg, value);
  });
  panel.append(why, renewLine, form);
  li.append(head, session, panel);
  leg.el = { card: li, state, panel, why, renew };
  return li;
}

function setLegState(leg, state, text) {
  leg.el.state.dataset.state = state;
  leg.el.state.textContent = text;
  updateCallState();
}

function updateCallState() {
  const el = $('connection');
  const n = legs.length;
  const closed = legs.filter((l) => l.closedBySession).length;
  const open = legs.filter((l) => l.el?.state.dataset.state === 'open').length;
  const waiting = legs.filter((l) => ['dropped', 'refused', 'idle'].includes(l.el?.state.dataset.state)).length;
  let state;
  let text;
  if (n === 0) [state, text] = ['idle', 'No live legs'];
  else if (closed === n) [state, text] = ['closed', `Call ended (${n} ${n === 1 ? 'leg' : 'legs'} closed)`];
  else if (waiting > 0) [state, text] = ['dropped', `${waiting} of ${n} legs need a ticket`];
  else if (open + closed === n) [state, text] = ['open', `Watching ${open} of ${n} legs`];
  else [state, text] = ['connecting', 'Connecting'];
  el.dataset.state = state;
  el.textContent = text;
  $('f-legs').textContent = n === 0 ? '-' : `${n} (${legs.map((l) => l.speaker).join(', ')})`;
}

/** A line of the time line, placed by its start; `entry` keeps the element and its place keys. */
function placeLine(entry) {
  const at = timelineIndex(timeline, entry);
  const list = $('timeline');
  list.insertBefore(entry.li, timeline[at]?.li ?? null);
  timeline.splice(at, 0, entry);
}

function removeLine(entry) {
  const at = timeline.indexOf(entry);
  if (at >= 0) timeline.splice(at, 1);
  entry.li.remove();
}

function lineElement(leg, ev, partial) {
  const li = document.createElement('li');
  li.className = `${colour(leg)}${partial ? ' partial' : ''}`;
  li.dataset.speaker = leg.speaker;
  li.dataset.segment = ev.segmentId;
  li.dataset.startMs = String(Number(ev.start?.ms) || 0);
  const time = document.createElement('time');
  time.textContent = partial ? `${clock(ev.start?.ms)}-` : `${clock(ev.start?.ms)}-${clock(ev.end?.ms)}`;
  const speaker = document.createElement('span');
  speaker.className = 'speaker';
  speaker.textContent = leg.speaker;
  const sep = document.createElement('span');
  sep.textContent = partial ? ' (still speaking): ' : ': ';
  sep.className = 'sep';
  const text = document.createElement('span');
  text.className = 'text';
  text.textContent = ev.text;
  li.append(time, speaker, sep, text);
  return li;
}

function onPartial(leg, ev) {
  const startMs = Number(ev.start?.ms) || 0;
  const p = leg.partial;
  if (p && p.segmentId === ev.segmentId && p.startMs === startMs) {
    p.li.querySelector('.text').textContent = ev.text;
    return;
  }
  if (p) removeLine(p);
  leg.partial = { segmentId: ev.segmentId, startMs, leg: leg.index, li: lineElement(leg, ev, true), final: null };
  placeLine(leg.partial);
}

function onFinal(leg, ev) {
  if (leg.partial && leg.partial.segmentId === ev.segmentId) {
    removeLine(leg.partial);
    leg.partial = null;
  }
  const li = lineElement(leg, ev, false);
  // An empty final (a commit of silence) keeps its place but shows nothing, as the merged
  // transcript's readable formats leave it out.
  if (ev.text === '') li.hidden = true;
  placeLine({ segmentId: ev.segmentId, startMs: Number(ev.start?.ms) || 0, leg: leg.index, li, final: ev });
}

function showHistory() {
  const list = $('history-links');
  list.replaceChildren();
  const id = fragment.call;
  if (id && fragment.history) {
    $('history-note').textContent = `The call's merged transcript (${id}), from your application:`;
    for (const format of ['txt', 'srt', 'vtt', 'json']) {
      const href = callHistoryLink(fragment.history, id, format, location.href);
      if (!href) continue;
      const a = document.createElement('a');
      a.href = href;
      a.textContent = `Call transcript (${format})`;
      a.dataset.format = format;
      a.rel = 'noopener';
      const li = document.createElement('li');
      li.append(a);
      list.append(li);
    }
  } else {
    $('history-note').textContent =
      `The call's merged transcript is at .../stt/calls/${id ?? ''}/transcript; downloads take the access key, so your application serves them (the history link parameter, docs/console.md).`;
  }
  const text = timeline
    .filter((e) => e.final && e.final.text.trim() !== '')
    .map((e) => `[${clock(e.startMs)}] ${legs[e.leg].speaker}: ${e.final.text}`)
    .join('\n');
  const a = document.createElement('a');
  a.href = URL.createObjectURL(new Blob([text === '' ? '' : `${text}\n`], { type: 'text/plain' }));
  a.download = `${id ?? 'call'}.txt`;
  a.textContent = 'The lines shown here (txt)';
  a.dataset.format = 'local';
  const li = document.createElement('li');
  li.append(a);
  list.append(li);
  $('history').hidden = false;
}

// ------------------------------------------------------------------ sockets

function connect(leg, ticket) {
  leg.el.panel.hidden = true;
  leg.opened = false;
  setLegState(leg, 'connecting', 'Connecting');
  const ws = new WebSocket(watchSocketUrl(location.href, leg.session, ticket));
  leg.ws = ws;
  ws.onopen = () => {
    if (leg.ws !== ws) return;
    leg.opened = true;
    setLegState(leg, 'connecting', 'Connected, waiting for the session');
  };
  ws.onmessage = (m) => {
    if (leg.ws !== ws || typeof m.data !== 'string') return;
    let ev;
    try {
      ev = JSON.parse(m.data);
    } catch {
      return logEvent(`${leg.speaker}: the server sent something that is not JSON`, 'error');
    }
    onEvent(leg, ev);
  };
  ws.onclose = (e) => {
    if (leg.ws === ws) void onClose(leg, e);
  };
}

function onEvent(leg, ev) {
  const who = leg.speaker;
  switch (ev.type) {
    case 'watching':
      leg.watching = ev;
      setLegState(leg, 'open', ev.streaming ? `Live (epoch ${ev.epoch})` : 'Paused: no client is streaming');
      logEvent(
        `${who}: watching, ${ev.state.toLowerCase()}, ${ev.streaming ? 'a client is streaming' : 'no client is streaming now'}` +
          (ev.segments > 0 ? '; earlier lines are in the call transcript' : ''),
      );
      break;
    case 'ready':
      setLegState(leg, 'open', `Live (epoch ${ev.epoch})`);
      logEvent(`${who}: a client is streaming, epoch ${ev.epoch}`);
      break;
    case 'partial':
      onPartial(leg, ev);
      break;
    case 'final':
      onFinal(leg, ev);
      break;
    case 'gap':
      logEvent(`${who}: gap, ${ev.samples} samples of silence inserted at epoch ${ev.epoch} sample ${ev.sampleOffset}`, 'warn');
      break;
    case 'accepting':
      logEvent(`${who}: accepting ${ev.accepting}${ev.reason ? ` (${ev.reason})` : ''}`, ev.accepting ? 'info' : 'warn');
      break;
    case 'notice':
      logEvent(`${who}: notice ${ev.code}: ${ev.message}`, 'warn');
      break;
    case 'error':
      logEvent(`${who}: error ${ev.code}: ${ev.message}`, 'error');
      break;
    case 'closed':
      leg.closedBySession = true;
      if (leg.partial) {
        removeLine(leg.partial);
        leg.partial = null;
      }
      setLegState(leg, 'closed', `Closed (${ev.status})`);
      logEvent(`${who}: closed, ${ev.status}, ${ev.segments} segments`);
      if (legs.every((l) => l.closedBySession)) showHistory();
      break;
    default:
      break;
  }
}

const CLOSE_REASONS = {
  1006: 'the connection was lost',
  1011: 'the server hit an error',
  1012: 'the server is restarting',
  4000: 'the leg moved to another server',
  4002: 'this page did not keep up with the events',
};

async function onClose(leg, e) {
  leg.ws = null;
  if (leg.closedBySession) return;
  if (!leg.opened) {
    // As in the live view: the browser hides the refusal; a refused handshake spent the ticket.
    let reachable = false;
    try {
      reachable = (await fetch('/healthz', { cache: 'no-store' })).ok;
    } catch {
      reachable = false;
    }
    const why = reachable
      ? `The server refused ${leg.speaker}'s ticket. A ticket works once and for about a minute: this one was already used (a reloaded page or a shared link), has expired, or is for another session. The leg may also be closed, watched by as many pages as it takes (8), or served by another server. Ask your application for a fresh ticket.`
      : `The server could not be reached for ${leg.speaker}. Check the connection, then ask your application for a fresh ticket.`;
    setLegState(leg, 'refused', 'Ticket refused');
    logEvent(why, 'error');
    needTicket(leg, why);
    return;
  }
  if (e.code === 1000) {
    setLegState(leg, 'closed', 'Disconnected');
    return;
  }
  const why = `${leg.speaker}'s connection ended (${CLOSE_REASONS[e.code] ?? `code ${e.code}`}). The session goes on without this page; watching it again needs a fresh ticket.`;
  setLegState(leg, 'dropped', 'Disconnected');
  logEvent(why, 'error');
  needTicket(leg, why);
}

// ------------------------------------------------------------------ ticket hand-off, per leg

function needTicket(leg, why) {
  leg.el.why.textContent = why;
  leg.el.renew.hidden = !fragment.renew;
  leg.el.panel.hidden = false;
  if (window.parent !== window && fragment.origin) {
    const capturedSamples = String(leg.watching?.capturedSamples ?? '0');
    window.parent.postMessage(
      { type: NEED_TICKET, sessionId: leg.session, capturedSamples, mode: 'watch', callId: fragment.call, speaker: leg.speaker },
      fragment.origin,
    );
  }
}

function openRenew(leg) {
  const url = new URL(fragment.renew);
  url.searchParams.set('session', leg.session);
  url.searchParams.set('mode', 'watch');
  leg.renewWindow = window.open(url.toString(), `scribed-renew-${leg.index}`, 'popup,width=520,height=400');
  if (!leg.renewWindow)
    showAlert('The browser blocked the window that fetches a fresh ticket: allow pop-ups for this page, or paste a ticket.');
}

window.addEventListener('message', (e) => {
  if (!fragment.origin || e.origin !== fragment.origin) return;
  const data = e.data;
  if (!data || data.type !== TICKET_MESSAGE || !isTicket(data.ticket)) return;
  const leg = legs.find((l) => l.session === data.sessionId);
  if (!leg || (e.source !== window.parent && e.source !== leg.renewWindow)) return;
  if (leg.ws !== null || leg.closedBySession) return;
  logEvent(`${leg.speaker}: fresh ticket received from the application`);
  connect(leg, data.ticket);
});

// ------------------------------------------------------------------ start

$('f-call').textContent = fragment.call ?? '-';
$('legs').append(...legs.map(legCard));
for (const p of fragment.problems) logEvent(p, 'warn');
for (const leg of legs) setLegState(leg, 'idle', 'Not connected');
updateCallState();
if (!fragment.call) {
  showAlert('This page is opened from your application with #call=...&legs=... in its address (docs/console.md).');
} else if (legs.length === 0) {
  // No leg to watch (none joined yet, or all have ended): what the call said is in its transcript.
  logEvent('no live legs in the link: the call transcript has what was said');
  showHistory();
} else {
  for (const leg of legs) {
    const ticket = fragment.legs[leg.index].ticket;
    if (ticket) connect(leg, ticket);
    else
      needTicket(
        leg,
        'This address carries no ticket for this leg (tickets are taken out of the address once used, so a reload has none).',
      );
  }
}
