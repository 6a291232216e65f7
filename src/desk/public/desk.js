// The desk (docs/desk.md): search what was said, read a call or a transcription with its
// speakers and times, play its recording from any word, and watch live sessions with their
// alerts. Signed in by a session cookie from a login link; the page holds no key.
/* global window, document, location */
import * as api from './desk-api.js';
import { followPlayback, formatMs, renderTranscript } from './transcript-view.js';
import { LiveWatch } from './live-view.js';

const $ = (id) => document.getElementById(id);

function signedOut(why) {
  $('desk').hidden = true;
  $('logout').hidden = true;
  $('signed-out').hidden = false;
  $('who').textContent = 'Not signed in';
  if (why) $('signed-out-why').textContent = why;
}

/** A 401 anywhere means the session ended (logged out, idle or expired). */
function failed(stateEl, err) {
  if (err instanceof api.DeskError && err.status === 401) signedOut('Your desk session has ended (logged out or expired). Open a new login link to continue.');
  else stateEl.textContent = `Error: ${err.message}`;
}

// ------------------------------------------------------------------ search

let filters = null;
let nextCursor = null;

function localToIso(value) {
  return value ? new Date(value).toISOString() : '';
}

function hitItem(h) {
  const li = document.createElement('li');
  const link = document.createElement('a');
  const target = h.callId ? `call=${encodeURIComponent(h.callId)}` : `t=${encodeURIComponent(h.transcriptionId)}`;
  link.href = `#${target}&at=${h.startMs}&hit=${encodeURIComponent(`${h.transcriptionId}:${h.segmentId}`)}`;
  for (const part of h.highlights) {
    if (part.match) {
      const mark = document.createElement('mark');
      mark.textContent = part.text;
      link.append(mark);
    } else link.append(part.text);
  }
  const meta = document.createElement('div');
  meta.className = 'meta';
  meta.textContent = [h.speaker ? `${h.speaker}` : null, `${formatMs(h.startMs)}-${formatMs(h.endMs)}`, h.callId ? `call ${h.callId}` : h.transcriptionId, new Date(h.createdAt).toLocaleString()]
    .filter(Boolean)
    .join(' · ');
  li.append(link, meta);
  return li;
}

async function runSearch(more) {
  const state = $('search-state');
  state.textContent = 'Searching...';
  try {
    const page = await api.search(filters, more ? nextCursor : null);
    if (!more) $('results').replaceChildren();
    for (const h of page.items) $('results').append(hitItem(h));
    nextCursor = page.nextCursor;
    $('more').hidden = nextCursor === null;
    const shown = $('results').children.length;
    state.textContent = shown === 0 ? 'Nothing found.' : `${shown} result${shown === 1 ? '' : 's'}${nextCursor ? ' so far' : ''}.`;
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

async function openReader(params) {
  const kind = params.has('call') ? 'call' : 't';
  const id = params.get(kind);
  const at = Number(params.get('at') ?? 0);
  const [hitT, hitSeg] = (params.get('hit') ?? '').split(':');
  const state = $('reader-state');
  $('reader').hidden = false;
  state.textContent = 'Loading...';
  try {
    let segments;
    let legs = [];
    if (kind === 'call') {
      const t = await api.callTranscriptOf(id);
      segments = t.segments;
      legs = t.legs.map((l) => l.speaker);
      $('reader-heading').textContent = `Call: ${t.title || t.callId}`;
      $('reader-facts').textContent = `${t.callId}${t.externalId ? ` · PBX ${t.externalId}` : ''} · ${t.status} · ${t.legs.map((l) => l.speaker).join(', ')} · ${formatMs(t.durationMs)}`;
    } else {
      const t = await api.transcriptOf(id);
      segments = t.segments;
      $('reader-heading').textContent = `Transcript: ${t.title || t.transcriptionId}`;
      $('reader-facts').textContent = `${t.transcriptionId} · ${t.status} · ${formatMs(t.durationMs)}`;
    }
    const hitLine = renderTranscript(document, $('transcript'), segments, player, hitSeg ? { transcriptionId: hitT, segmentId: hitSeg } : null);
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

function route() {
  const params = new URLSearchParams(location.hash.slice(1));
  if (params.has('call') || params.has('t')) void openReader(params);
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
      meta.textContent = [s.callId ? `call ${s.callId}` : null, s.speaker, s.state === 'RECORDING' ? 'live' : 'paused', s.sessionId].filter(Boolean).join(' · ');
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
    $('who').textContent = `Signed in to ${s.accountName ? `${s.accountName} (${s.accountId})` : s.accountId}, read-only, until ${new Date(s.expiresAt).toLocaleString()}`;
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
