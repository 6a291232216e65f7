// Watching a live session from the desk (docs/desk.md): a watch ticket from /desk/api/ (the
// cookie stands in for an integrator's backend), then the session's watch socket (docs/
// protocol.md, "Watching a session"): partials, finals, and the `alert` events live rules send.
/* global location */
import { watchTicket } from './desk-api.js';
import { formatMs } from './transcript-view.js';

/** What an alert says (the `alert` event of live rules: docs/rules.md): its rule, who, the
 * words that matched (or the segment's text) and where on the session's clock. */
export function alertText(a) {
  const rule = a.ruleName ?? a.ruleId ?? 'a rule';
  const said = a.match?.text ?? a.text ?? '';
  const who = a.speaker ? ` (${a.speaker})` : '';
  const at = typeof a.startMs === 'number' ? ` at ${formatMs(a.startMs)}` : '';
  return `Alert: ${rule}${who}${said ? `: "${said}"` : ''}${at}`;
}

export class LiveWatch {
  constructor(doc, els) {
    this.doc = doc;
    this.els = els;
    this.socket = null;
  }

  async watch(session) {
    this.stop();
    const { els } = this;
    els.panel.hidden = false;
    els.heading.textContent = `Watching ${session.title || session.sessionId}${session.speaker ? ` (${session.speaker})` : ''}`;
    els.alerts.replaceChildren();
    els.finals.replaceChildren();
    els.partial.textContent = '';
    els.banner.hidden = true;
    els.state.textContent = 'Connecting...';
    let ticket;
    try {
      ticket = await watchTicket(session.sessionId);
    } catch (err) {
      els.state.textContent = `Cannot watch: ${err.message}`;
      return;
    }
    const proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
    const socket = new WebSocket(`${proto}//${location.host}${ticket.watchUrl}?ticket=${encodeURIComponent(ticket.ticket)}`);
    this.socket = socket;
    let closed = false;
    socket.addEventListener('message', (m) => {
      let event;
      try {
        event = JSON.parse(m.data);
      } catch {
        return;
      }
      if (event.type === 'watching')
        els.state.textContent = event.streaming ? 'Live: a client is streaming' : 'Live: no client is streaming right now';
      else if (event.type === 'partial') els.partial.textContent = event.text;
      else if (event.type === 'final') this.final(event);
      else if (event.type === 'alert') this.alert(event);
      else if (event.type === 'closed') {
        closed = true;
        els.state.textContent = 'The session has ended; its transcript is in search.';
      }
    });
    socket.addEventListener('close', () => {
      if (this.socket === socket && !closed) els.state.textContent = 'Disconnected: choose Watch again to reconnect.';
    });
  }

  final(event) {
    const li = this.doc.createElement('li');
    const time = this.doc.createElement('span');
    time.textContent = formatMs(event.start?.ms ?? 0);
    const text = this.doc.createElement('span');
    text.className = 'text';
    text.textContent = event.text;
    li.append(time, ' ', this.doc.createElement('span'), ' ', text);
    this.els.finals.append(li);
    this.els.partial.textContent = '';
  }

  alert(event) {
    const text = alertText(event);
    const li = this.doc.createElement('li');
    li.textContent = text;
    this.els.alerts.prepend(li);
    this.els.banner.textContent = text;
    this.els.banner.hidden = false;
  }

  stop() {
    const s = this.socket;
    this.socket = null;
    if (s) s.close(1000, 'stopped watching');
    this.els.panel.hidden = true;
  }
}
