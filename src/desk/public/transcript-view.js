// A transcript on the desk (docs/desk.md): a call's merged transcript (every leg, by start
// time, with its speaker) or one transcription's, each word a place to play the recording from.
// No DOM state of its own beyond the elements it builds; the recording is the caller's
// <audio> element.

/** `m:ss.s` (and `h:mm:ss.s` past an hour). */
export function formatMs(ms) {
  const tenths = Math.floor(ms / 100);
  const s = Math.floor(tenths / 10);
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const sec = String(s % 60).padStart(2, '0');
  return `${h > 0 ? `${h}:${String(m).padStart(2, '0')}` : m}:${sec}.${tenths % 10}`;
}

/** When a segment's words were said: its first word's start to its last word's end, or the
 * segment's own bounds when it has no words. */
export function speechSpan(seg) {
  const words = Array.isArray(seg.words) ? seg.words : [];
  if (words.length === 0) return { startMs: seg.startMs, endMs: seg.endMs };
  return { startMs: words[0].startMs, endMs: words[words.length - 1].endMs };
}

export function seekTo(player, ms) {
  if (player.hidden) return;
  player.currentTime = ms / 1000;
  void player.play().catch(() => undefined);
}

/** Fill `list` with one line per segment: its time (a button that plays from there), its
 * speaker (calls) and its words (each plays from its own start). `hit` names the line to mark
 * (`transcriptionId` and segment id). Returns the hit's line, if any. */
export function renderTranscript(doc, list, segments, player, hit) {
  list.replaceChildren();
  let hitLine = null;
  for (const seg of segments) {
    const li = doc.createElement('li');
    li.dataset.startMs = String(seg.startMs);
    const time = doc.createElement('button');
    time.type = 'button';
    time.className = 'seek';
    // The time of speech: a segment ends after its trailing silence (the detector waits for
    // it), so the words' own times say when the party spoke, and lines of two parties do not
    // seem to overlap.
    const spoken = speechSpan(seg);
    time.textContent = `${formatMs(spoken.startMs)}-${formatMs(spoken.endMs)}`;
    time.setAttribute('aria-label', `${time.textContent}, play from here`);
    time.addEventListener('click', () => seekTo(player, spoken.startMs));
    const speaker = doc.createElement('span');
    speaker.className = 'speaker';
    speaker.textContent = seg.speaker ? `${seg.speaker}:` : '';
    const text = doc.createElement('span');
    text.className = 'text';
    if (Array.isArray(seg.words) && seg.words.length > 0) {
      seg.words.forEach((w, i) => {
        const word = doc.createElement('span');
        word.className = 'word';
        word.textContent = w.word;
        word.dataset.startMs = String(w.startMs);
        word.dataset.endMs = String(w.endMs);
        word.title = `Play from ${formatMs(w.startMs)}`;
        word.addEventListener('click', () => seekTo(player, w.startMs));
        if (i > 0) text.append(' ');
        text.append(word);
      });
    } else {
      text.textContent = seg.text;
    }
    // The spaces read as such in a copy or a screen reader (the grid ignores them).
    li.append(time, ' ', speaker, ' ', text);
    if (hit && seg.id === hit.segmentId && (seg.transcriptionId ?? hit.transcriptionId) === hit.transcriptionId) {
      li.classList.add('hit');
      hitLine = li;
    }
    list.append(li);
  }
  return hitLine;
}

/** Mark the words being played (aria-current), as the recording's time moves. */
export function followPlayback(list, player) {
  let current = [];
  player.addEventListener('timeupdate', () => {
    const ms = player.currentTime * 1000;
    for (const w of current) w.removeAttribute('aria-current');
    current = [...list.querySelectorAll('.word')].filter((w) => Number(w.dataset.startMs) <= ms && ms < Number(w.dataset.endMs));
    for (const w of current) w.setAttribute('aria-current', 'true');
  });
}
