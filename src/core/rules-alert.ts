// A live rule's alert (docs/rules.md) as the webhook `alert.triggered` carries it: the socket
// event's fields, the session and History row it happened in, and links to read around it.
import { API_BASE, type AlertEvent } from './protocol.js';
import type { WebhookEvent } from './webhook-events.js';

export function alertWebhookEvent(alert: AlertEvent, session: { sessionId: string; transcriptionId: string }, now: string): WebhookEvent {
  const { type, ...fields } = alert;
  void type;
  return {
    type: 'alert.triggered',
    timestamp: now,
    data: {
      ...fields,
      sessionId: session.sessionId,
      transcriptionId: session.transcriptionId,
      links: {
        rule: `${API_BASE}/stt/rules/${alert.ruleId}`,
        session: `${API_BASE}/stt/realtime/sessions/${session.sessionId}`,
        transcript: `${API_BASE}/stt/transcriptions/${session.transcriptionId}/transcript`,
        ...(alert.callId ? { call: `${API_BASE}/stt/calls/${alert.callId}` } : {}),
      },
    },
  };
}
