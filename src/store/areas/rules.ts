// Live rules (contract/rules.ts, docs/rules.md): CRUD per account, another account's rule
// reads as missing; an alert goes out through the webhook outbox (areas/webhooks.ts).
import type { RuleCondition } from '../../core/rules.js';
import type { WebhookEvent } from '../../core/webhook-events.js';
import type { CreateRuleInput, KeptAlert, RuleChange, RuleRecord } from '../store.js';
import type { Db, SqlValue, Tx } from '../sql/db.js';
import { lockAccount } from './ledger.js';
import { enqueueWebhookEvent } from './webhooks.js';

interface RuleRow {
  id: string;
  account_id: string;
  name: string;
  condition_json: string;
  speaker: string | null;
  partials: bigint;
  enabled: bigint;
  created_at: string;
  updated_at: string;
}

function toRule(r: RuleRow): RuleRecord {
  return {
    id: r.id,
    accountId: r.account_id,
    name: r.name,
    condition: JSON.parse(r.condition_json) as RuleCondition,
    speaker: r.speaker,
    partials: Number(r.partials) === 1,
    enabled: Number(r.enabled) === 1,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

export async function getRule(db: Tx, ruleId: string, accountId: string): Promise<RuleRecord | null> {
  const row = await db.one<RuleRow>('SELECT * FROM stt_rules WHERE id = ? AND account_id = ?', [ruleId, accountId]);
  return row ? toRule(row) : null;
}

export async function createRule(db: Db, input: CreateRuleInput, maxPerAccount: number): Promise<RuleRecord | null> {
  return db.tx(async (tx) => {
    await lockAccount(tx, input.accountId);
    const count = await tx.one<{ n: bigint }>('SELECT COUNT(*) AS n FROM stt_rules WHERE account_id = ?', [input.accountId]);
    if (Number(count?.n ?? 0) >= maxPerAccount) return null;
    await tx.run(
      `INSERT INTO stt_rules (id, account_id, name, condition_json, speaker, partials, enabled, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      [
        input.id,
        input.accountId,
        input.name,
        JSON.stringify(input.condition),
        input.speaker,
        input.partials ? 1n : 0n,
        input.enabled ? 1n : 0n,
        input.createdAt,
        input.createdAt,
      ],
    );
    return getRule(tx, input.id, input.accountId);
  });
}

export async function listRules(db: Tx, accountId: string): Promise<RuleRecord[]> {
  return (await db.all<RuleRow>('SELECT * FROM stt_rules WHERE account_id = ? ORDER BY created_at, id', [accountId])).map(toRule);
}

export async function updateRule(db: Db, ruleId: string, accountId: string, change: RuleChange, now: Date): Promise<RuleRecord | null> {
  return db.tx(async (tx) => {
    const sets: string[] = ['updated_at = ?'];
    const params: SqlValue[] = [now.toISOString()];
    const set = (column: string, value: SqlValue): void => {
      sets.push(`${column} = ?`);
      params.push(value);
    };
    if (change.name !== undefined) set('name', change.name);
    if (change.condition !== undefined) set('condition_json', JSON.stringify(change.condition));
    if (change.speaker !== undefined) set('speaker', change.speaker);
    if (change.partials !== undefined) set('partials', change.partials ? 1n : 0n);
    if (change.enabled !== undefined) set('enabled', change.enabled ? 1n : 0n);
    const n = await tx.run(`UPDATE stt_rules SET ${sets.join(', ')} WHERE id = ? AND account_id = ?`, [...params, ruleId, accountId]);
    return n === 0 ? null : getRule(tx, ruleId, accountId);
  });
}

export async function deleteRule(db: Db, ruleId: string, accountId: string): Promise<boolean> {
  return (await db.run('DELETE FROM stt_rules WHERE id = ? AND account_id = ?', [ruleId, accountId])) > 0;
}

export async function raiseRuleAlert(db: Db, accountId: string, event: WebhookEvent): Promise<number> {
  return db.tx(async (tx) => {
    await keepAlert(tx, accountId, event);
    return enqueueWebhookEvent(tx, accountId, event);
  });
}

/** The alert kept with its History row and call (the call's analytics, the desk's timeline),
 * from the webhook's data; written once (a retried write finds it there). */
async function keepAlert(tx: Tx, accountId: string, event: WebhookEvent): Promise<void> {
  const d = event.data as Record<string, unknown>;
  const str = (v: unknown) => (typeof v === 'string' ? v : null);
  const ms = (v: unknown) => BigInt(Math.max(0, Math.round(typeof v === 'number' && Number.isFinite(v) ? v : 0)));
  const id = str(d.alertId);
  const transcriptionId = str(d.transcriptionId);
  if (id === null || transcriptionId === null) return;
  const match = d.match as { text?: unknown } | null | undefined;
  await tx.run(
    `INSERT INTO rule_alerts (id, account_id, transcription_id, call_id, rule_id, rule_name, condition, source, speaker, start_ms, end_ms, text, created_at)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
    [
      id,
      accountId,
      transcriptionId,
      str(d.callId),
      str(d.ruleId) ?? '',
      str(d.ruleName) ?? '',
      str(d.condition) ?? '',
      d.source === 'spotted' ? 'spotted' : 'transcript',
      str(d.speaker),
      ms(d.startMs),
      ms(d.endMs),
      str(match?.text) ?? str(d.text) ?? '',
      event.timestamp,
    ],
  );
}

interface AlertRow {
  id: string;
  transcription_id: string;
  call_id: string | null;
  rule_id: string;
  rule_name: string;
  condition: string;
  source: string;
  speaker: string | null;
  start_ms: bigint;
  end_ms: bigint;
  text: string;
  created_at: string;
}

/** The alerts kept for a call (call_...) or a History row (stt_...), in time order. */
export async function listKeptAlerts(db: Tx, subjectId: string, accountId: string): Promise<KeptAlert[]> {
  const column = subjectId.startsWith('call_') ? 'call_id' : 'transcription_id';
  const rows = await db.all<AlertRow>(
    `SELECT id, transcription_id, call_id, rule_id, rule_name, condition, source, speaker, start_ms, end_ms, text, created_at
     FROM rule_alerts WHERE ${column} = ? AND account_id = ? ORDER BY start_ms, id`,
    [subjectId, accountId],
  );
  return rows.map((r) => ({
    alertId: r.id,
    transcriptionId: r.transcription_id,
    callId: r.call_id,
    ruleId: r.rule_id,
    ruleName: r.rule_name,
    condition: r.condition,
    source: r.source === 'spotted' ? 'spotted' : 'transcript',
    speaker: r.speaker,
    startMs: Number(r.start_ms),
    endMs: Number(r.end_ms),
    text: r.text,
    raisedAt: r.created_at,
  }));
}
