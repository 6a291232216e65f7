// The desk's agent view (docs/desk.md): one agent's calls over a date range with the agent's
// average talk share, pace and interruptions and how often each category matched, every call a
// link to its page. Reads GET .../stt/agents/{agentId}/analytics with the desk's cookie.
import { formatMs } from './transcript-view.js';

const percent = (x) => (x === null || x === undefined ? '-' : `${Math.round(x * 100)}%`);
const number = (x, digits = 0) => (x === null || x === undefined ? '-' : x.toFixed(digits));

function cell(doc, tag, text) {
  const c = doc.createElement(tag);
  c.textContent = text;
  return c;
}

function table(doc, caption, headers, rows) {
  const t = doc.createElement('table');
  t.append(cell(doc, 'caption', caption));
  const head = doc.createElement('thead');
  const hr = doc.createElement('tr');
  for (const h of headers) {
    const th = cell(doc, 'th', h);
    th.scope = 'col';
    hr.append(th);
  }
  head.append(hr);
  const body = doc.createElement('tbody');
  for (const r of rows) {
    const tr = doc.createElement('tr');
    for (const v of r) tr.append(v instanceof doc.defaultView.Node ? wrap(doc, v) : cell(doc, 'td', v));
    body.append(tr);
  }
  t.append(head, body);
  return t;
}

function wrap(doc, node) {
  const td = doc.createElement('td');
  td.append(node);
  return td;
}

/** Fill `box` with the agent's figures (`agg`, the API's answer); `dateOf` writes a date. */
export function renderAgent(doc, box, agg, dateOf) {
  box.replaceChildren();
  const summary = doc.createElement('dl');
  summary.className = 'figures';
  const facts = [
    ['Calls', String(agg.calls)],
    ['Average length', agg.averageDurationMs === null ? '-' : formatMs(agg.averageDurationMs)],
    ['Average talk share', percent(agg.averageTalkShare)],
    ['Interruptions per call', number(agg.interruptionsPerCall, 2)],
    ['Average pace (words/min)', number(agg.averageWordsPerMinute)],
  ];
  for (const [k, v] of facts) summary.append(cell(doc, 'dt', k), cell(doc, 'dd', v));
  box.append(summary);
  if (agg.categories.length > 0) {
    box.append(
      table(
        doc,
        'Category hit rates',
        ['Category', 'Calls', 'Rate'],
        agg.categories.map((c) => [c.name, String(c.calls), percent(c.rate)]),
      ),
    );
  }
  const calls = agg.items.map((c) => {
    const a = doc.createElement('a');
    a.href = `#call=${encodeURIComponent(c.callId)}`;
    a.textContent = dateOf(c.completedAt);
    return [
      a,
      formatMs(c.durationMs),
      percent(c.talkShare),
      number(c.wordsPerMinute),
      c.interruptionsMade === null ? '-' : String(c.interruptionsMade),
      c.categories.join(', ') || '-',
    ];
  });
  box.append(table(doc, 'Calls', ['Ended', 'Length', 'Talk share', 'Words/min', 'Interruptions', 'Categories'], calls));
}
