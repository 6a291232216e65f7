// The desk (docs/desk.md): search what was said, read a call or a transcription with its
// speakers and times, play its recording from any word, and watch live sessions with their
// alerts. Signed in by a session cookie from a login link; the page holds no key.
/* global window, document, location */
import * as api from './desk-api.js';
import { followPlayback, formatMs, renderTranscript } from './transcript-view.js';
import { LiveWatch } from './live-view.js';
import { figuresLine, renderTimeline } from './timeline.js';
import { renderAgent } from './agent-view.js';

const $ = (id) => document.getElementById(id);

/** Dates and times as the browser's own locale writes them (not a fixed US form). */
const when = new Intl.DateTimeFormat(navigator.languages, { dateStyle: 'medium', timeStyle: 'short' });
const dateOf = (iso) => when.format(new Date(iso));

function signedOut(why) {
  $('desk').hidden = true;
  $('logout').hidden = true;
  $('signed-out').hidden = false;
  $('who').textContent = 'Not signed in';
  if (why) $('signed-out-why').textContent = why;
}

/** A 401 anywhere means the session ended (logged out, idle or expired). */
function failed(stateEl, err) {
  if (err instanceof api.DeskError && err.status === 401)
    signedOut('Your desk session has ended (logged out or expired). Open a new login link to continue.');
  else stateEl.textContent = `Error: ${err.message}`;
}

// ------------------------------------------------------------------ search

let filters = null;
let nextCursor = null;
let hitCount = 0;

function localToIso(value) {
  return value ? new Date(value).toISOString() : '';
}

// Hits are grouped by what they belong to (a call, or a transcription of its own), in the order
// the search ranked their first hit; each group is headed by its title, PBX id, parties, duration
// and date, read once per group. Hits of a group that say the same words again are one line with
// their other times.
let groups = new Map();
const facts = new Map();

function describe(kind, id) {
  if (!facts.has(id)) facts.set(id, kind === 'call' ? api.callOf(id) : api.transcriptionOf(id));
  return facts.get(id);
}

function groupHeading(kind, id, link, meta) {
  void describe(kind, id)
    .then((d) => {
      link.textContent = d.title || id;
      const parts =
        kind === 'call'
          ? [
              d.externalId ? `PBX ${d.externalId}` : null,
              d.legs.map((l) => l.speaker).join(', ') || null,
              `${formatMs(d.durationMs ?? 0)} long`,
              dateOf(d.createdAt),
            ]
          : [d.durationMs !== undefined && d.durationMs !== null ? `${formatMs(d.durationMs)} long` : null, dateOf(d.createdAt)];
      meta.textContent = parts.filter(Boolean).join(' · ');
    })
    .catch(() => undefined);
}

function groupFor(h) {
  const kind = h.callId ? 'call' : 't';
  const id = h.callId ?? h.transcriptionId;
  let g = groups.get(id);
  if (g) return g;
  const li = document.createElement('li');
  const title = document.createElement('a');
  title.className = 'group-title';
  title.href = `#${kind}=${encodeURIComponent(id)}`;
  title.textContent = id;
  const meta = document.createElement('div');
  meta.className = 'meta';
  meta.textContent = dateOf(h.createdAt);
  const hits = document.createElement('ol');
  hits.className = 'hits';
  hits.setAttribute('aria-label', 'Where it was said');
  li.append(title, meta, hits);
  $('results').append(li);
  groupHeading(kind, id, title, meta);
  g = { kind, id, hits, said: new Map() };
  groups.set(id, g);
  return g;
}

function addHit(h) {
  const g = groupFor(h);
  const key = `${h.speaker ?? ''}|${h.text.toLowerCase().replace(/\s+/g, ' ').trim()}`;
  const same = g.said.get(key);
  if (same) {
    same.times.push(h.startMs);
    same.meta.textContent = hitMeta(h.speaker, same.times);
    return;
  }
  const li = document.createElement('li');
  const link = document.createElement('a');
  link.href = `#${g.kind}=${encodeURIComponent(g.id)}&at=${h.startMs}&hit=${encodeURIComponent(`${h.transcriptionId}:${h.segmentId}`)}`;
  for (const part of h.highlights) {
    if (part.match) {
      const mark = document.createElement('mark');
      mark.textContent = part.text;
      link.append(mark);
    } else link.append(part.text);
  }
  const meta = document.createElement('div');
  meta.className = 'meta';
  const times = [h.startMs];
  meta.textContent = hitMeta(h.speaker, times);
  li.append(link, meta);
  g.hits.append(li);
  g.said.set(key, { meta, times });
}

function hitMeta(speaker, times) {
  return [speaker, `at ${times.map(formatMs).join(', ')}`].filter(Boolean).join(' · ');
}

async function runSearch(more) {
  const state = $('search-state');
  state.textContent = 'Searching...';
  try {
    const page = await api.search(filters, more ? nextCursor : null);
    if (!more) {
      $('results').replaceChildren();
      groups = new Map();
      hitCount = 0;
    }
    for (const h of page.items) addHit(h);
    hitCount += page.items.length;
    nextCursor = page.nextCursor;
    $('more').hidden = nextCursor === null;
    const shown = groups.size;
    const what = (n, one, many) => `${n} ${n === 1 ? one : many}`;
    state.textContent =
      hitCount === 0
        ? 'Nothing found.'
        : `${what(hitCount, 'result', 'results')} in ${what(shown, 'call or transcript', 'calls or transcripts')}${nextCursor ? ' so far' : ''}.`;
  } catch (err) {
    failed(state, err);
  }
}

$('search-form').addEventListener('submit', (e) => {
  e.preventDefault();
  const f = new FormData(e.target);
  filters = {
    q: f.get('q'),
    from: localToIso(f.get('from')),
    to: localToIso(f.get('to')),
    speaker: f.get('speaker'),
    callId: f.get('callId'),
    externalId: f.get('externalId'),
    title: f.get('title'),
  };
  void runSearch(false);
});
$('more').addEventListener('click', () => void runSearch(true));

// ------------------------------------------------------------------ reading

const player = $('player');
followPlayback($('transcript'), player);

// The recording is asked for once, by the player itself (ranges as it plays): shown when its
// metadata arrives, "No recording" when the answer is not audio (404: none kept; 409: still
// being made) or cannot be played.
function showRecording(url, atMs) {
  player.hidden = true;
  $('no-recording').hidden = true;
  const shown = new AbortController();
  player.addEventListener(
    'loadedmetadata',
    () => {
      shown.abort();
      player.hidden = false;
      if (atMs > 0) player.currentTime = atMs / 1000;
    },
    { signal: shown.signal },
  );
  player.addEventListener(
    'error',
    () => {
      shown.abort();
      $('no-recording').hidden = false;
    },
    { signal: shown.signal },
  );
  player.src = url;
  return shown;
}

let recording = null;

/** The call's timeline and figures; its speech lanes alone while the analytics are not computed
 * (they are when the call's last leg ends). */
async function showTimeline(id, transcript) {
  let analytics = null;
  try {
    analytics = await api.callAnalyticsOf(id);
  } catch (err) {
    if (err instanceof api.DeskError && err.status === 401) return failed($('reader-state'), err);
  }
  $('timeline-figures').textContent = analytics ? figuresLine(analytics) : 'No figures yet: they are computed when the call has ended.';
  renderTimeline(document, $('timeline'), transcript, analytics, player);
  $('timeline-box').hidden = false;
}

async function openReader(params) {
  const kind = params.has('call') ? 'call' : 't';
  const id = params.get(kind);
  const at = Number(params.get('at') ?? 0);
  const [hitT, hitSeg] = (params.get('hit') ?? '').split(':');
  const state = $('reader-state');
  $('reader').hidden = false;
  $('timeline-box').hidden = true;
  state.textContent = 'Loading...';
  try {
    let segments;
    let legs = [];
    if (kind === 'call') {
      const t = await api.callTranscriptOf(id);
      segments = t.segments;
      void showTimeline(id, t);
      legs = t.legs.map((l) => l.speaker);
      $('reader-heading').textContent = `Call: ${t.title || t.callId}`;
      const call = await describe('call', id).catch(() => null);
      $('reader-facts').textContent = [
        t.externalId ? `PBX ${t.externalId}` : null,
        t.legs.map((l) => l.speaker).join(', ') || null,
        `${formatMs(t.durationMs)} long`,
        call ? dateOf(call.createdAt) : null,
        t.status,
        t.callId,
      ]
        .filter(Boolean)
        .join(' · ');
    } else {
      const t = await api.transcriptOf(id);
      segments = t.segments;
      $('reader-heading').textContent = `Transcript: ${t.title || t.transcriptionId}`;
      $('reader-facts').textContent = `${formatMs(t.durationMs)} long · ${t.status} · ${t.transcriptionId}`;
    }
    const hitLine = renderTranscript(
      document,
      $('transcript'),
      segments,
      player,
      hitSeg ? { transcriptionId: hitT, segmentId: hitSeg } : null,
    );
    state.textContent = `${segments.length} line${segments.length === 1 ? '' : 's'}.`;
    recording?.abort();
    recording = showRecording(api.recordingUrl(kind === 'call' ? 'call' : 'transcription', id, legs), at);
    $('reader-heading').focus();
    hitLine?.scrollIntoView({ block: 'center' });
  } catch (err) {
    $('transcript').replaceChildren();
    failed(state, err);
  }
}

/** The page shows either the reader (a call or a transcript, with a way back) or the search
 * and live panels; the results stay as they were behind the reader. */
function route() {
  const params = new URLSearchParams(location.hash.slice(1));
  const reading = params.has('call') || params.has('t');
  $('reader').hidden = !reading;
  $('search-panel').hidden = reading;
  $('live-panel').hidden = reading;
  $('agent-panel').hidden = reading;
  $('desk-nav').hidden = reading;
  if (reading) void openReader(params);
  else {
    recording?.abort();
    player.pause();
  }
}
window.addEventListener('hashchange', route);

// ------------------------------------------------------------------ live

const watch = new LiveWatch(document, {
  panel: $('watch'),
  heading: $('watch-heading'),
  state: $('watch-state'),
  banner: $('alert-banner'),
  alerts: $('alerts'),
  partial: $('watch-partial'),
  finals: $('watch-finals'),
});
$('watch-stop').addEventListener('click', () => watch.stop());

async function refreshLive() {
  const state = $('live-state');
  try {
    const { items } = await api.liveSessions();
    const list = $('live-list');
    list.replaceChildren();
    for (const s of items) {
      const li = document.createElement('li');
      const title = document.createElement('div');
      title.textContent = s.title || s.sessionId;
      const meta = document.createElement('div');
      meta.className = 'meta';
      meta.textContent = [s.callId ? `call ${s.callId}` : null, s.speaker, s.state === 'RECORDING' ? 'live' : 'paused', s.sessionId]
        .filter(Boolean)
        .join(' · ');
      const button = document.createElement('button');
      button.type = 'button';
      button.textContent = 'Watch';
      button.setAttribute('aria-label', `Watch ${s.title || s.sessionId}${s.speaker ? ` (${s.speaker})` : ''}`);
      button.dataset.sessionId = s.sessionId;
      button.addEventListener('click', () => void watch.watch(s));
      li.append(title, meta, button);
      list.append(li);
    }
    state.textContent = items.length === 0 ? 'No live sessions.' : `${items.length} live.`;
  } catch (err) {
    failed(state, err);
  }
}
$('live-refresh').addEventListener('click', () => void refreshLive());

// ------------------------------------------------------------------ agents

$('agent-form').addEventListener('submit', async (e) => {
  e.preventDefault();
  const f = new FormData(e.target);
  const state = $('agent-state');
  state.textContent = 'Loading...';
  try {
    const agg = await api.agentAnalytics(String(f.get('agentId')).trim(), localToIso(f.get('from')), localToIso(f.get('to')));
    renderAgent(document, $('agent-view'), agg, dateOf);
    state.textContent = `${agg.calls} call${agg.calls === 1 ? '' : 's'} from ${dateOf(agg.from)} to ${dateOf(agg.to)}.`;
  } catch (err) {
    $('agent-view').replaceChildren();
    failed(state, err);
  }
});

// ------------------------------------------------------------------ session

$('logout').addEventListener('click', async () => {
  try {
    watch.stop();
    await api.logout();
    signedOut('You have logged out.');
  } catch (err) {
    failed($('who'), err);
  }
});

async function start() {
  try {
    const s = await api.loadSession();
    $('who').textContent =
      `Signed in to ${s.accountName ? `${s.accountName} (${s.accountId})` : s.accountId}, read-only, until ${dateOf(s.expiresAt)}`;
    $('desk').hidden = false;
    $('logout').hidden = false;
    route();
    void refreshLive();
  } catch (err) {
    if (err instanceof api.DeskError && err.status === 401) signedOut();
    else $('who').textContent = `Error: ${err.message}`;
  }
}
void start();
