// A call's timeline on the desk (docs/desk.md, docs/analytics.md): one lane of speech per leg
// (when each party's words were said), then the call's silences, its interruptions, its
// category hits and the live rules' alerts raised during it, each mark a button that plays the recording from its start. Built from the
// call's merged transcript and its analytics; no DOM state of its own beyond what it builds.
import { formatMs, seekTo, speechSpan } from './transcript-view.js';

const pct = (ms, durationMs) => `${Math.max(0, Math.min(100, (ms / durationMs) * 100)).toFixed(3)}%`;

function lane(doc, name, kind) {
  const row = doc.createElement('div');
  row.className = `lane lane-${kind}`;
  row.setAttribute('role', 'group');
  row.setAttribute('aria-label', name);
  const label = doc.createElement('span');
  label.className = 'lane-name';
  label.textContent = name;
  const track = doc.createElement('div');
  track.className = 'track';
  row.append(label, track);
  return { row, track };
}

function mark(doc, track, player, durationMs, span, label) {
  const b = doc.createElement('button');
  b.type = 'button';
  b.className = 'mark';
  b.style.left = pct(span.startMs, durationMs);
  b.style.width = pct(Math.max(0, span.endMs - span.startMs), durationMs);
  b.dataset.startMs = String(span.startMs);
  b.dataset.endMs = String(span.endMs);
  b.setAttribute('aria-label', `${label}, play from here`);
  b.title = label;
  b.addEventListener('click', () => seekTo(player, span.startMs));
  track.append(b);
  return b;
}

const range = (s) => `${formatMs(s.startMs)} to ${formatMs(s.endMs)}`;

/** Fill `box` with the timeline of a call: `transcript` is its merged transcript (segments with
 * speaker and words), `analytics` its figures and categories (null when not computed yet). */
export function renderTimeline(doc, box, transcript, analytics, player) {
  box.replaceChildren();
  const durationMs = Math.max(1, analytics?.figures.durationMs ?? transcript.durationMs ?? 1);
  const speakers = transcript.legs.map((l) => l.speaker ?? 'speaker');
  for (const speaker of speakers) {
    const { row, track } = lane(doc, `${speaker} speaks`, 'speech');
    for (const seg of transcript.segments.filter((s) => (s.speaker ?? 'speaker') === speaker)) {
      const span = speechSpan(seg);
      mark(doc, track, player, durationMs, span, `${speaker} speaks ${range(span)}: ${seg.text}`);
    }
    box.append(row);
  }
  if (!analytics) return;
  const f = analytics.figures;
  const silences = lane(doc, `Silences over ${f.nonTalk.thresholdMs / 1000} s`, 'silence');
  for (const s of f.nonTalk.spans) mark(doc, silences.track, player, durationMs, s, `Silence ${range(s)}`);
  const interruptions = lane(doc, 'Interruptions', 'interruption');
  for (const i of f.interruptions) {
    const span = { startMs: i.atMs, endMs: i.atMs + i.overlapMs };
    mark(doc, interruptions.track, player, durationMs, span, `${i.by ?? 'a party'} interrupts ${i.of ?? 'a party'} at ${formatMs(i.atMs)}`);
  }
  const categories = lane(doc, 'Categories', 'category');
  for (const c of analytics.categories) {
    for (const h of c.hits) {
      const what = h.negated ? 'not said in' : h.text ? `"${h.text}"` : 'at';
      mark(doc, categories.track, player, durationMs, h, `${c.name}: ${what} ${range(h)}${h.speaker ? ` (${h.speaker})` : ''}`);
    }
  }
  // The live rules' alerts raised during the call (kept with it when raised), on the leg's time.
  const alerts = lane(doc, 'Alerts', 'alert');
  for (const a of analytics.alerts ?? []) {
    const how = a.source === 'spotted' ? ', spotted in the audio' : '';
    mark(
      doc,
      alerts.track,
      player,
      durationMs,
      a,
      `Alert ${a.ruleName}: "${a.text}" ${range(a)}${a.speaker ? ` (${a.speaker})` : ''}${how}`,
    );
  }
  box.append(silences.row, interruptions.row, categories.row, alerts.row);
}

/** One line of the call's figures: each leg's talk share and pace, silence, interruptions. */
export function figuresLine(analytics) {
  const f = analytics.figures;
  const legs = f.legs.map(
    (l) =>
      `${l.speaker ?? 'speaker'} talks ${Math.round(l.talkShare * 100)}%${l.wordsPerMinute !== null ? `, ${Math.round(l.wordsPerMinute)} words/min` : ''}`,
  );
  return [
    ...legs,
    `silence ${formatMs(f.nonTalk.totalMs)}`,
    `${f.interruptions.length} interruption${f.interruptions.length === 1 ? '' : 's'}`,
    `overtalk ${Math.round(f.overtalk.share * 100)}%`,
  ].join(' · ');
}
