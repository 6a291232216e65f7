// scribed live console (docs/console.md). Opened as /console/#session=rts_..&ticket=tkt_..:
// the ticket travels in the fragment, which the browser never sends to a server, and is taken
// out of the address bar at once (a reload must not replay a spent ticket). The page opens the
// stream socket with ?ticket= and shows what the session says; it holds no access key, ever.
//
// Watching (`mode=watch` in the fragment): the page opens the session's read-only watch socket
// instead (docs/protocol.md, "Watching a session"), beside whatever client streams the call,
// and shows the same partials and finals; it sends nothing.
//
// Audio: none by default (listen only). "Start microphone" captures getUserMedia, "Stream an
// audio file" plays a local file in real time; both go through capture-worklet.js, which
// resamples and encodes to the session's encoding, and CaptureBuffer (protocol.js), which frames
// them by epoch and sampleOffset and keeps what the server has not acknowledged.
//
// When the socket drops, the session needs a resume and the page a fresh ticket, and both take
// the access key, which only the application's backend holds: the page asks for a ticket
// (a message to the embedding page, a window opened on the application's `renew` page, or a
// ticket pasted by the user) and sends the unacknowledged audio after the next `ready`.
/* global window, document, location, history, AudioContext, AudioWorkletNode */
import {
  CaptureBuffer,
  NEED_TICKET,
  TICKET_MESSAGE,
  clock,
  finalRuns,
  fragmentWithoutTicket,
  historyLink,
  isTicket,
  parseFragment,
  streamSocketUrl,
  watchSocketUrl,
} from './protocol.js';
import { bytesPerSample } from './audio.js';

const $ = (id) => document.getElementById(id);
/** Unacknowledged audio the page keeps at most, in seconds (then capture stops). */
const MAX_BUFFER_SECONDS = 120;
const MAX_EVENTS = 200;

const fragment = parseFragment(location.hash, location.href);
history.replaceState(null, '', `${location.pathname}${location.search}${fragmentWithoutTicket(location.hash)}`);

const s = {
  ws: null,
  opened: false,
  closedBySession: false,
  ready: null,
  serverCaptured: null,
  accepting: false,
  buffer: null,
  capture: null,
  closeAfterCapture: false,
  partialSegment: null,
  finals: [],
  renewWindow: null,
};

// ------------------------------------------------------------------ display

function setConnection(state, text) {
  const el = $('connection');
  el.dataset.state = state;
  el.textContent = text;
}

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

function seconds(samples) {
  return s.ready ? `${(samples / s.ready.sampleRateHz).toFixed(1)} s` : '';
}

function updateFacts() {
  const r = s.ready;
  $('f-encoding').textContent = r ? `${r.inputEncoding} (${r.sampleRateHz} Hz)` : '-';
  $('f-epoch').textContent = r ? String(r.epoch) : '-';
  const held = s.serverCaptured;
  const mine = s.buffer?.captured;
  const captured = $('f-captured');
  captured.dataset.held = String(held ?? '');
  captured.dataset.local = String(mine ?? '');
  captured.textContent =
    held === null
      ? '-'
      : `${held} samples (${seconds(held)})${mine !== null && mine !== undefined && mine !== held ? `; ${mine} captured here` : ''}`;
  $('f-accepting').textContent = r ? (s.accepting ? 'yes' : 'no') : '-';
  const pending = s.buffer?.pendingSamples ?? 0;
  $('f-pending').textContent = s.buffer ? `${pending} samples (${seconds(pending)})` : '-';
}

function updateControls() {
  if (fragment.watch) {
    // Read-only: the audio, commits and the close belong to the client that streams.
    document.querySelector('.controls').hidden = true;
    $('source-state').textContent = 'Watching: this page is read-only; the audio comes from the client that streams the session.';
    return;
  }
  const live = s.ws !== null && s.ready !== null && !s.closedBySession;
  const capturing = s.capture !== null;
  const mic = $('mic');
  mic.disabled = !(live || (capturing && s.capture.kind === 'mic')) || (capturing && s.capture.kind !== 'mic') || !s.accepting;
  mic.setAttribute('aria-pressed', String(capturing && s.capture.kind === 'mic'));
  mic.textContent = capturing && s.capture.kind === 'mic' ? 'Stop microphone' : 'Start microphone';
  $('file').disabled = !live || capturing || !s.accepting;
  $('stop').disabled = !capturing;
  $('commit').disabled = !live;
  $('close').disabled = !live || s.closeAfterCapture;
  $('source-state').textContent = capturing
    ? s.capture.kind === 'mic'
      ? 'Microphone: sending what it hears.'
      : `Audio file: sending ${s.capture.name} in real time.`
    : 'Listen only: this page sends no audio.';
}

function renderFinal(ev) {
  const li = document.createElement('li');
  li.dataset.segment = ev.segmentId;
  const time = document.createElement('time');
  time.textContent = `${clock(ev.start?.ms)}-${clock(ev.end?.ms)}`;
  li.append(time);
  const text = document.createElement('span');
  text.className = 'text';
  finalRuns(ev).forEach((run, i) => {
    if (i > 0) text.append(' ');
    if (run.low) {
      const mark = document.createElement('mark');
      mark.className = 'low';
      mark.title = `low confidence (${run.confidence.toFixed(2)})`;
      mark.textContent = run.text;
      text.append(mark);
    } else {
      text.append(run.text);
    }
  });
  li.append(text);
  if (ev.text === '') li.hidden = true;
  $('finals').append(li);
}

function showHistory() {
  const section = $('history');
  const list = $('history-links');
  list.replaceChildren();
  const id = s.ready?.transcriptionId;
  if (id && fragment.history) {
    $('history-note').textContent = `The transcript ${id}, from your application:`;
    for (const format of ['txt', 'srt', 'vtt', 'json']) {
      const href = historyLink(fragment.history, id, format, location.href);
      if (!href) continue;
      const a = document.createElement('a');
      a.href = href;
      a.textContent = `Transcript (${format})`;
      a.dataset.format = format;
      a.rel = 'noopener';
      const li = document.createElement('li');
      li.append(a);
      list.append(li);
    }
  } else {
    $('history-note').textContent =
      `The transcript ${id ?? ''} is in History; downloads take the access key, so your application serves them (the history link parameter, docs/console.md).`;
  }
  const text = s.finals
    .map((f) => f.text)
    .filter((t) => t.trim() !== '')
    .join('\n');
  const a = document.createElement('a');
  a.href = URL.createObjectURL(new Blob([text === '' ? '' : `${text}\n`], { type: 'text/plain' }));
  a.download = `${id ?? 'transcript'}.txt`;
  a.textContent = 'The finals shown here (txt)';
  a.dataset.format = 'local';
  const li = document.createElement('li');
  li.append(a);
  list.append(li);
  section.hidden = false;
}

// ------------------------------------------------------------------ socket

function connect(ticket) {
  showAlert('');
  $('ticket-panel').hidden = true;
  s.opened = false;
  setConnection('connecting', 'Connecting');
  const ws = new WebSocket((fragment.watch ? watchSocketUrl : streamSocketUrl)(location.href, fragment.session, ticket));
  ws.binaryType = 'arraybuffer';
  s.ws = ws;
  ws.onopen = () => {
    if (s.ws !== ws) return;
    s.opened = true;
    setConnection('connecting', 'Connected, waiting for the session');
  };
  ws.onmessage = (m) => {
    if (s.ws !== ws || typeof m.data !== 'string') return;
    let ev;
    try {
      ev = JSON.parse(m.data);
    } catch {
      return logEvent('the server sent something that is not JSON', 'error');
    }
    onEvent(ev);
  };
  ws.onclose = (e) => {
    if (s.ws === ws) void onClose(e);
  };
}

function send(data) {
  if (s.ws && s.ws.readyState === WebSocket.OPEN) s.ws.send(data);
}

function onEvent(ev) {
  switch (ev.type) {
    case 'watching':
      // The watch socket's snapshot: first, and again when the session pauses.
      s.ready = { ...s.ready, ...ev };
      s.accepting = ev.accepting === true;
      s.serverCaptured = Number(ev.capturedSamples);
      setConnection('open', ev.streaming ? `Watching (epoch ${ev.epoch})` : `Watching (epoch ${ev.epoch}; no client is streaming)`);
      logEvent(
        `watching: ${ev.state.toLowerCase()}, ${ev.streaming ? 'a client is streaming' : 'no client is streaming now'}, ${ev.capturedSamples} samples held` +
          (ev.segments > 0 && ev.openSegmentId !== `seg_0` ? `; finals before this page opened are in the transcript` : ''),
      );
      break;
    case 'ready': {
      if (fragment.watch) {
        // Another client's stream socket attached (a new epoch); nothing to send from here.
        s.ready = { ...s.ready, ...ev };
        s.accepting = ev.accepting === true;
        s.serverCaptured = Number(ev.capturedSamples);
        setConnection('open', `Watching (epoch ${ev.epoch})`);
        logEvent(`a client is streaming: epoch ${ev.epoch}, ${ev.capturedSamples} samples held`);
        break;
      }
      s.ready = ev;
      s.accepting = ev.accepting === true;
      s.serverCaptured = Number(ev.capturedSamples);
      s.buffer ??= new CaptureBuffer(bytesPerSample(ev.inputEncoding), ev.sampleRateHz * MAX_BUFFER_SECONDS);
      const resend = s.buffer.ready(ev.epoch, ev.sampleOffset, ev.capturedSamples);
      if (s.accepting) for (const frame of resend) send(frame);
      setConnection('open', `Connected (epoch ${ev.epoch})`);
      logEvent(
        `ready: epoch ${ev.epoch}, ${ev.capturedSamples} samples held${resend.length > 0 ? `, sending ${resend.length} unacknowledged frames again` : ''}`,
      );
      break;
    }
    case 'ack':
      s.serverCaptured = Number(ev.capturedSamples);
      s.buffer?.ack(ev.capturedSamples);
      if (ev.duplicateSamples) logEvent(`ack: ${ev.duplicateSamples} duplicate samples dropped by the server`, 'warn');
      break;
    case 'partial':
      s.partialSegment = ev.segmentId;
      $('partial').textContent = ev.text;
      break;
    case 'final':
      s.finals.push(ev);
      renderFinal(ev);
      if (s.partialSegment === ev.segmentId) $('partial').textContent = '';
      break;
    case 'committed':
      if (fragment.watch) s.serverCaptured = Number(ev.capturedSamples);
      logEvent(`committed ${ev.segmentId ?? '(no audio to commit)'} at sample ${ev.capturedSamples}`);
      break;
    case 'gap':
      logEvent(`gap: ${ev.samples} samples of silence inserted at epoch ${ev.epoch} sample ${ev.sampleOffset}`, 'warn');
      break;
    case 'accepting':
      s.accepting = ev.accepting === true;
      logEvent(`accepting: ${ev.accepting}${ev.reason ? ` (${ev.reason})` : ''}`, ev.accepting ? 'info' : 'warn');
      if (!s.accepting && ev.reason === 'INSUFFICIENT_CHARACTERS') {
        showAlert('The account has no Characters left: the session takes no more audio. What it accepted is transcribed.');
        stopCapture();
      }
      break;
    case 'notice':
      logEvent(`notice ${ev.code}: ${ev.message}`, 'warn');
      break;
    case 'error':
      logEvent(`error ${ev.code}: ${ev.message}`, 'error');
      if (ev.fatal) showAlert(`The server ended the connection: ${ev.message}`);
      break;
    case 'closed':
      s.closedBySession = true;
      logEvent(`closed: ${ev.status}, ${ev.segments} segments, ${ev.capturedSamples} samples`);
      setConnection('closed', `Session closed (${ev.status})`);
      stopCapture();
      showHistory();
      break;
    default:
      break;
  }
  updateFacts();
  updateControls();
}

const CLOSE_REASONS = {
  1006: 'the connection was lost',
  1011: 'the server hit an error or the recognizer failed',
  1012: 'the server is restarting',
  1013: 'no recognizer was free',
  4000: fragment.watch ? 'the session moved to another server' : 'another connection took the session over',
  4002: 'this page did not keep up with the events',
};

async function onClose(e) {
  s.ws = null;
  s.buffer?.detached();
  updateControls();
  if (s.closedBySession) return;
  if (!s.opened) {
    // The browser hides the refusal's status and body; the server is either unreachable or
    // refused the handshake, and a refused handshake has used the ticket up either way.
    let reachable = false;
    try {
      reachable = (await fetch('/healthz', { cache: 'no-store' })).ok;
    } catch {
      reachable = false;
    }
    const busy = fragment.watch
      ? 'The session may also be closed, watched by as many pages as it takes (8), or served by another server.'
      : 'The session may also be closed, paused or in use by another client.';
    const why = reachable
      ? `The server refused this ticket. A ticket works once and for about a minute: this one was already used (a reloaded page or a shared link), has expired, or is for another session. ${busy} Ask your application for a fresh ticket.`
      : 'The server could not be reached. Check the connection, then ask your application for a fresh ticket.';
    setConnection('refused', 'Ticket refused');
    showAlert(why);
    needTicket(why);
    return;
  }
  if (e.code === 1000) {
    setConnection('closed', 'Disconnected');
    return;
  }
  const pending = s.buffer?.pendingSamples ?? 0;
  const why = `The connection ended (${CLOSE_REASONS[e.code] ?? `code ${e.code}`}). The server keeps everything it acknowledged${
    pending > 0 ? `; ${seconds(pending)} of audio not yet acknowledged is kept here and sent after reconnecting` : ''
  }. Reconnecting needs a fresh ticket.`;
  setConnection('dropped', 'Disconnected');
  logEvent(why, 'error');
  needTicket(why);
}

// ------------------------------------------------------------------ ticket hand-off

function cursor() {
  return String(s.buffer?.captured ?? s.serverCaptured ?? 0);
}

function needTicket(why) {
  $('ticket-why').textContent = why;
  $('renew').hidden = !fragment.renew;
  $('ticket-panel').hidden = false;
  if (window.parent !== window && fragment.origin) {
    // A watcher's ticket needs no resume (the session is someone else's to resume): `mode` says so.
    window.parent.postMessage(
      { type: NEED_TICKET, sessionId: fragment.session, capturedSamples: cursor(), mode: fragment.watch ? 'watch' : 'stream' },
      fragment.origin,
    );
  }
}

function openRenew() {
  const url = new URL(fragment.renew);
  url.searchParams.set('session', fragment.session);
  if (fragment.watch) url.searchParams.set('mode', 'watch');
  else url.searchParams.set('capturedSamples', cursor());
  s.renewWindow = window.open(url.toString(), 'scribed-renew', 'popup,width=520,height=400');
  if (!s.renewWindow)
    showAlert('The browser blocked the window that fetches a fresh ticket: allow pop-ups for this page, or paste a ticket.');
}

window.addEventListener('message', (e) => {
  if (!fragment.origin || e.origin !== fragment.origin) return;
  if (e.source !== window.parent && e.source !== s.renewWindow) return;
  const data = e.data;
  if (!data || data.type !== TICKET_MESSAGE || data.sessionId !== fragment.session || !isTicket(data.ticket)) return;
  if (s.ws !== null || s.closedBySession) return;
  logEvent('fresh ticket received from the application');
  connect(data.ticket);
});

// ------------------------------------------------------------------ capture

async function startCapture(kind, file) {
  if (s.capture || !s.ready) return;
  const ctx = new AudioContext();
  const capture = { kind, ctx, node: null, source: null, stream: null, name: file?.name ?? '' };
  s.capture = capture;
  updateControls();
  try {
    await ctx.audioWorklet.addModule('capture-worklet.js');
    const node = new AudioWorkletNode(ctx, 'scribed-capture', {
      numberOfInputs: 1,
      numberOfOutputs: 1,
      outputChannelCount: [1],
      channelCount: 1,
      channelCountMode: 'explicit',
      channelInterpretation: 'speakers',
      processorOptions: { targetRate: s.ready.sampleRateHz, encoding: s.ready.inputEncoding },
    });
    capture.node = node;
    node.port.onmessage = (m) => {
      if (m.data.bytes) onCaptured(m.data.bytes);
      if (m.data.done) captureDone(capture);
    };
    if (kind === 'mic') {
      capture.stream = await navigator.mediaDevices.getUserMedia({
        audio: { channelCount: 1, echoCancellation: false, noiseSuppression: false, autoGainControl: false },
      });
      capture.source = ctx.createMediaStreamSource(capture.stream);
    } else {
      const decoded = await ctx.decodeAudioData(await file.arrayBuffer());
      capture.source = ctx.createBufferSource();
      capture.source.buffer = decoded;
      capture.source.onended = () => stopCapture();
    }
    capture.source.connect(node);
    // The worklet writes silence; connected so the graph pulls it.
    node.connect(ctx.destination);
    if (kind === 'file') capture.source.start();
    await ctx.resume();
    logEvent(kind === 'mic' ? 'microphone started' : `streaming ${capture.name}`);
  } catch (err) {
    logEvent(`could not start the ${kind === 'mic' ? 'microphone' : 'file'}: ${err?.message ?? err}`, 'error');
    showAlert(
      kind === 'mic' ? 'The microphone could not be opened (permission refused or no device).' : 'The file could not be decoded as audio.',
    );
    teardown(capture);
  }
  updateControls();
}

function onCaptured(bytes) {
  if (!s.buffer) return;
  let frame;
  try {
    frame = s.buffer.add(bytes);
  } catch {
    showAlert(`More than ${MAX_BUFFER_SECONDS} s of audio is waiting for the server: capture stopped.`);
    stopCapture();
    return;
  }
  if (frame && s.accepting) send(frame);
  updateFacts();
}

/** Ask the worklet for its last samples; captureDone() follows. */
function stopCapture() {
  const capture = s.capture;
  if (!capture) return;
  if (capture.node && !capture.stopping) {
    capture.stopping = true;
    capture.node.port.postMessage('stop');
  } else if (!capture.node) {
    teardown(capture);
  }
}

function captureDone(capture) {
  teardown(capture);
  logEvent(capture.kind === 'mic' ? 'microphone stopped' : `${capture.name} sent`);
  if (s.closeAfterCapture) sendClose();
}

function teardown(capture) {
  capture.stream?.getTracks().forEach((t) => t.stop());
  try {
    capture.source?.disconnect();
    capture.node?.disconnect();
  } catch {
    // already disconnected
  }
  void capture.ctx.close().catch(() => undefined);
  if (s.capture === capture) s.capture = null;
  updateControls();
  updateFacts();
}

function sendClose() {
  s.closeAfterCapture = false;
  send(JSON.stringify({ type: 'close' }));
  logEvent('close sent: the session ends once its last segment is final');
}

// ------------------------------------------------------------------ start

$('mic').addEventListener('click', () => {
  if (s.capture?.kind === 'mic') stopCapture();
  else void startCapture('mic');
});
$('file').addEventListener('change', (e) => {
  const file = e.target.files?.[0];
  if (file) void startCapture('file', file);
  e.target.value = '';
});
$('stop').addEventListener('click', () => stopCapture());
$('commit').addEventListener('click', () => send(JSON.stringify({ type: 'commit' })));
$('close').addEventListener('click', () => {
  if (s.capture) {
    s.closeAfterCapture = true;
    stopCapture();
    updateControls();
  } else {
    sendClose();
  }
});
$('renew').addEventListener('click', openRenew);
$('ticket-form').addEventListener('submit', (e) => {
  e.preventDefault();
  const value = $('ticket-input').value.trim();
  if (!isTicket(value)) {
    showAlert('That is not a ticket (tickets start with tkt_).');
    return;
  }
  $('ticket-input').value = '';
  connect(value);
});

$('f-session').textContent = fragment.session ?? '-';
for (const p of fragment.problems) logEvent(p, 'warn');
updateFacts();
updateControls();
if (!fragment.session) {
  showAlert('This page is opened from your application with #session=...&ticket=... in its address (docs/console.md).');
} else if (fragment.ticket) {
  connect(fragment.ticket);
} else {
  const why = 'This address carries no ticket (tickets are taken out of the address once used, so a reload has none).';
  setConnection('idle', 'Not connected');
  needTicket(why);
}
