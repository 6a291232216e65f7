// Webhook endpoints and the delivery outbox (docs/webhooks.md). The outbox row is written by
// enqueueWebhookEvent inside the transaction that changes the state it reports (history.ts
// calls it for every History status change), so an event exists exactly when its change
// committed. Delivery rows are claimed with a lease like job rows (job-claims.ts): a node that
// dies mid-attempt leaves a row any node takes up once the lease runs out, with the same id,
// which is the webhook-id of every attempt.
import { newId } from '../../core/ids.js';
import type { WebhookEvent, WebhookEventType } from '../../core/webhook-events.js';
import type {
  CallbackDeliveryInput,
  ClaimedWebhookDelivery,
  ParkedCallback,
  CreateWebhookEndpointInput,
  WebhookAttemptOutcome,
  WebhookAttemptRecord,
  WebhookDeliveryRecord,
  WebhookEndpointPatch,
  WebhookEndpointRecord,
} from '../store.js';
import { nowIso, type Db, type SqlValue, type Tx } from '../sql/db.js';
import { lockAccount } from './ledger.js';

interface EndpointRow {
  id: string;
  account_id: string;
  url: string;
  description: string | null;
  events_json: string;
  include_transcript: bigint;
  secret_generation: bigint;
  previous_until: string | null;
  enabled: bigint;
  disabled_reason: string | null;
  failing_since: string | null;
  created_at: string;
  updated_at: string;
}

interface DeliveryRow {
  id: string;
  endpoint_id: string;
  account_id: string;
  event_type: WebhookEventType;
  payload_json: string;
  status: WebhookDeliveryRecord['status'];
  attempts: bigint;
  schedule_base: bigint;
  next_attempt_at: string | null;
  last_status_code: bigint | null;
  last_error: string | null;
  last_response: string | null;
  created_at: string;
  updated_at: string;
  delivered_at: string | null;
  callback_url: string | null;
}

interface AttemptRow {
  delivery_id: string;
  attempt: bigint;
  node: string;
  started_at: string;
  duration_ms: bigint;
  status_code: bigint | null;
  error: string | null;
}

function toEndpoint(r: EndpointRow): WebhookEndpointRecord {
  return {
    id: r.id,
    accountId: r.account_id,
    url: r.url,
    description: r.description,
    events: JSON.parse(r.events_json) as WebhookEventType[],
    includeTranscript: Number(r.include_transcript) === 1,
    secretGeneration: Number(r.secret_generation),
    previousUntil: r.previous_until,
    enabled: Number(r.enabled) === 1,
    disabledReason: r.disabled_reason,
    failingSince: r.failing_since,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
  };
}

function toAttempt(r: AttemptRow): WebhookAttemptRecord {
  return {
    attempt: Number(r.attempt),
    node: r.node,
    startedAt: r.started_at,
    durationMs: Number(r.duration_ms),
    statusCode: r.status_code === null ? null : Number(r.status_code),
    error: r.error,
  };
}

function toDelivery(r: DeliveryRow, log: WebhookAttemptRecord[]): WebhookDeliveryRecord {
  return {
    id: r.id,
    endpointId: r.endpoint_id,
    accountId: r.account_id,
    eventType: r.event_type,
    payload: r.payload_json,
    status: r.status,
    attempts: Number(r.attempts),
    scheduleBase: Number(r.schedule_base),
    nextAttemptAt: r.next_attempt_at,
    lastStatusCode: r.last_status_code === null ? null : Number(r.last_status_code),
    lastError: r.last_error,
    lastResponse: r.last_response,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    deliveredAt: r.delivered_at,
    callbackUrl: r.callback_url,
    log,
  };
}

async function withLog(db: Tx, rows: DeliveryRow[]): Promise<WebhookDeliveryRecord[]> {
  if (rows.length === 0) return [];
  const attempts = await db.all<AttemptRow>(
    `SELECT * FROM webhook_attempts WHERE delivery_id IN (${rows.map(() => '?').join(', ')}) ORDER BY delivery_id, attempt`,
    rows.map((r) => r.id),
  );
  return rows.map((r) => toDelivery(r, attempts.filter((a) => a.delivery_id === r.id).map(toAttempt)));
}

/**
 * Write one delivery per enabled endpoint of the account subscribed to the event, inside the
 * caller's transaction. An account without endpoints costs one indexed read.
 */
export async function enqueueWebhookEvent(tx: Tx, accountId: string, event: WebhookEvent): Promise<number> {
  const endpoints = await tx.all<{ id: string; events_json: string }>(
    'SELECT id, events_json FROM webhook_endpoints WHERE account_id = ? AND enabled = 1',
    [accountId],
  );
  let written = 0;
  for (const e of endpoints) {
    if (!(JSON.parse(e.events_json) as string[]).includes(event.type)) continue;
    const at = new Date(event.timestamp);
    await tx.run(
      `INSERT INTO webhook_deliveries (id, endpoint_id, account_id, event_type, payload_json, status, attempts, schedule_base, next_attempt_at,
                                       last_status_code, last_error, last_response, claimed_by, lease_until, created_at, updated_at, delivered_at)
       VALUES (?, ?, ?, ?, ?, 'PENDING', 0, 0, ?, NULL, NULL, NULL, NULL, NULL, ?, ?, NULL)`,
      [newId('msg', at), e.id, accountId, event.type, JSON.stringify(event), event.timestamp, event.timestamp, event.timestamp],
    );
    written++;
  }
  return written;
}

/**
 * A Deepgram callback's delivery, parked until its job ends: the account's hidden callback endpoint (kind 'callback',
 * subscribed to no event, never listed; created on first use under the account's lock) holds
 * it, so the claim, lease and per-endpoint limit treat it as any delivery; its URL is its own.
 */
export async function parkCallbackDelivery(db: Db, input: CallbackDeliveryInput): Promise<string> {
  return db.tx(async (tx) => {
    const at = input.now.toISOString();
    let endpoint = await tx.one<{ id: string }>("SELECT id FROM webhook_endpoints WHERE account_id = ? AND kind = 'callback'", [
      input.accountId,
    ]);
    if (!endpoint) {
      await lockAccount(tx, input.accountId);
      endpoint = await tx.one<{ id: string }>("SELECT id FROM webhook_endpoints WHERE account_id = ? AND kind = 'callback'", [
        input.accountId,
      ]);
      if (!endpoint) {
        endpoint = { id: newId('whe', input.now) };
        await tx.run(
          `INSERT INTO webhook_endpoints (id, account_id, url, description, events_json, include_transcript, secret_generation, previous_until,
                                          enabled, disabled_reason, failing_since, created_at, updated_at, kind)
           VALUES (?, ?, '', 'Deepgram callbacks', '[]', 0, 1, NULL, 1, NULL, NULL, ?, ?, 'callback')`,
          [endpoint.id, input.accountId, at, at],
        );
      }
    }
    const id = newId('msg', input.now);
    await tx.run(
      `INSERT INTO webhook_deliveries (id, endpoint_id, account_id, event_type, payload_json, status, attempts, schedule_base, next_attempt_at,
                                       last_status_code, last_error, last_response, claimed_by, lease_until, created_at, updated_at, delivered_at, callback_url)
       VALUES (?, ?, ?, 'transcription.completed', ?, 'PENDING', 0, 0, NULL, NULL, NULL, NULL, NULL, NULL, ?, ?, NULL, ?)`,
      [id, endpoint.id, input.accountId, input.payload, at, at, input.url],
    );
    return id;
  });
}

export async function listParkedCallbacks(db: Tx, limit: number): Promise<ParkedCallback[]> {
  const rows = await db.all<{ id: string; account_id: string; payload_json: string }>(
    "SELECT id, account_id, payload_json FROM webhook_deliveries WHERE status = 'PENDING' AND next_attempt_at IS NULL AND callback_url IS NOT NULL ORDER BY created_at, id LIMIT ?",
    [limit],
  );
  return rows.map((r) => ({ id: r.id, accountId: r.account_id, payload: r.payload_json }));
}

export async function releaseCallbackDelivery(
  db: Db,
  id: string,
  payload: string,
  eventType: WebhookEventType,
  now: Date,
): Promise<boolean> {
  const at = now.toISOString();
  const changed = await db.run(
    `UPDATE webhook_deliveries SET payload_json = ?, event_type = ?, next_attempt_at = ?, created_at = ?, updated_at = ?
      WHERE id = ? AND status = 'PENDING' AND next_attempt_at IS NULL AND callback_url IS NOT NULL`,
    [payload, eventType, at, at, at, id],
  );
  return changed === 1;
}

export async function createWebhookEndpoint(
  db: Db,
  input: CreateWebhookEndpointInput,
  maxPerAccount: number,
): Promise<WebhookEndpointRecord | null> {
  return db.tx(async (tx) => {
    await lockAccount(tx, input.accountId);
    const count = await tx.one<{ n: bigint }>("SELECT COUNT(*) AS n FROM webhook_endpoints WHERE account_id = ? AND kind = 'endpoint'", [
      input.accountId,
    ]);
    if (Number(count?.n ?? 0) >= maxPerAccount) return null;
    await tx.run(
      `INSERT INTO webhook_endpoints (id, account_id, url, description, events_json, include_transcript, secret_generation, previous_until,
                                      enabled, disabled_reason, failing_since, created_at, updated_at)
       VALUES (?, ?, ?, ?, ?, ?, 1, NULL, 1, NULL, NULL, ?, ?)`,
      [
        input.id,
        input.accountId,
        input.url,
        input.description,
        JSON.stringify(input.events),
        input.includeTranscript ? 1 : 0,
        input.createdAt,
        input.createdAt,
      ],
    );
    return toEndpoint((await tx.one<EndpointRow>('SELECT * FROM webhook_endpoints WHERE id = ?', [input.id]))!);
  });
}

export async function listWebhookEndpoints(db: Tx, accountId: string): Promise<WebhookEndpointRecord[]> {
  return (
    await db.all<EndpointRow>("SELECT * FROM webhook_endpoints WHERE account_id = ? AND kind = 'endpoint' ORDER BY created_at, id", [
      accountId,
    ])
  ).map(toEndpoint);
}

export async function getWebhookEndpoint(db: Tx, endpointId: string, accountId: string): Promise<WebhookEndpointRecord | null> {
  const row = await db.one<EndpointRow>("SELECT * FROM webhook_endpoints WHERE id = ? AND account_id = ? AND kind = 'endpoint'", [
    endpointId,
    accountId,
  ]);
  return row ? toEndpoint(row) : null;
}

export async function updateWebhookEndpoint(
  db: Db,
  endpointId: string,
  accountId: string,
  patch: WebhookEndpointPatch,
  now: Date,
): Promise<WebhookEndpointRecord | null> {
  const sets: string[] = [];
  const params: SqlValue[] = [];
  const set = (sql: string, v: SqlValue) => {
    sets.push(sql);
    params.push(v);
  };
  if (patch.url !== undefined) set('url = ?', patch.url);
  if (patch.events !== undefined) set('events_json = ?', JSON.stringify(patch.events));
  if (patch.description !== undefined) set('description = ?', patch.description);
  if (patch.includeTranscript !== undefined) set('include_transcript = ?', patch.includeTranscript ? 1 : 0);
  if (patch.enabled === true) sets.push('enabled = 1, disabled_reason = NULL, failing_since = NULL');
  if (patch.enabled === false) sets.push("enabled = 0, disabled_reason = 'disabled by the account'");
  set('updated_at = ?', now.toISOString());
  return db.tx(async (tx) => {
    const changed = await tx.run(`UPDATE webhook_endpoints SET ${sets.join(', ')} WHERE id = ? AND account_id = ? AND kind = 'endpoint'`, [
      ...params,
      endpointId,
      accountId,
    ]);
    return changed === 1 ? getWebhookEndpoint(tx, endpointId, accountId) : null;
  });
}

export async function rotateWebhookSecret(
  db: Db,
  endpointId: string,
  accountId: string,
  previousUntil: string,
  now: Date,
): Promise<WebhookEndpointRecord | null> {
  return db.tx(async (tx) => {
    const changed = await tx.run(
      "UPDATE webhook_endpoints SET secret_generation = secret_generation + 1, previous_until = ?, updated_at = ? WHERE id = ? AND account_id = ? AND kind = 'endpoint'",
      [previousUntil, now.toISOString(), endpointId, accountId],
    );
    return changed === 1 ? getWebhookEndpoint(tx, endpointId, accountId) : null;
  });
}

export async function deleteWebhookEndpoint(db: Db, endpointId: string, accountId: string): Promise<boolean> {
  return db.tx(async (tx) => {
    if (
      !(await tx.lockOne<{ id: string }>("SELECT id FROM webhook_endpoints WHERE id = ? AND account_id = ? AND kind = 'endpoint'", [
        endpointId,
        accountId,
      ]))
    )
      return false;
    await tx.run('DELETE FROM webhook_attempts WHERE delivery_id IN (SELECT id FROM webhook_deliveries WHERE endpoint_id = ?)', [
      endpointId,
    ]);
    await tx.run('DELETE FROM webhook_deliveries WHERE endpoint_id = ?', [endpointId]);
    await tx.run('DELETE FROM webhook_endpoints WHERE id = ?', [endpointId]);
    return true;
  });
}

export async function listWebhookDeliveries(
  db: Tx,
  endpointId: string,
  accountId: string,
  limit: number,
): Promise<WebhookDeliveryRecord[]> {
  if (!Number.isSafeInteger(limit) || limit < 1) throw new RangeError('limit must be a positive integer');
  const rows = await db.all<DeliveryRow>(
    'SELECT * FROM webhook_deliveries WHERE endpoint_id = ? AND account_id = ? ORDER BY created_at DESC, id DESC LIMIT ?',
    [endpointId, accountId, limit],
  );
  return withLog(db, rows);
}

export async function retryWebhookDelivery(
  db: Db,
  deliveryId: string,
  accountId: string,
  now: Date,
): Promise<WebhookDeliveryRecord | null> {
  return db.tx(async (tx) => {
    const at = now.toISOString();
    const changed = await tx.run(
      `UPDATE webhook_deliveries SET status = 'PENDING', schedule_base = attempts, next_attempt_at = ?, updated_at = ?
        WHERE id = ? AND account_id = ? AND status <> 'PENDING'`,
      [at, at, deliveryId, accountId],
    );
    const row = await tx.one<DeliveryRow>('SELECT * FROM webhook_deliveries WHERE id = ? AND account_id = ?', [deliveryId, accountId]);
    if (!row) return null;
    if (changed === 0 && row.status === 'PENDING')
      await tx.run('UPDATE webhook_deliveries SET next_attempt_at = ? WHERE id = ? AND next_attempt_at IS NOT NULL', [at, deliveryId]);
    return (await withLog(tx, [{ ...row, next_attempt_at: at }]))[0]!;
  });
}

export async function claimWebhookDelivery(
  db: Db,
  node: string,
  leaseMs: number,
  now: Date,
  perEndpoint: number,
): Promise<ClaimedWebhookDelivery | null> {
  const at = now.toISOString();
  // Every node polls several times a second: a plain read first, so an idle node takes no
  // write lock (on SQLite a transaction is BEGIN IMMEDIATE, the file's one writer) and writes
  // nothing to the disk while nothing is due.
  const due = await db.one<{ id: string }>("SELECT id FROM webhook_deliveries WHERE status = 'PENDING' AND next_attempt_at <= ? LIMIT 1", [
    at,
  ]);
  if (!due) return null;
  return db.tx(async (tx) => {
    const row = await tx.claimOne<DeliveryRow>(
      `SELECT d.* FROM webhook_deliveries d
        WHERE d.status = 'PENDING' AND d.next_attempt_at <= ?
          AND (d.claimed_by IS NULL OR d.lease_until IS NULL OR d.lease_until < ?)
          AND d.endpoint_id IN (SELECT e.id FROM webhook_endpoints e WHERE e.enabled = 1)
          AND (SELECT COUNT(*) FROM webhook_deliveries o
                WHERE o.endpoint_id = d.endpoint_id AND o.status = 'PENDING' AND o.claimed_by IS NOT NULL AND o.lease_until >= ?) < ?
        ORDER BY d.next_attempt_at, d.id LIMIT 1`,
      [at, at, at, perEndpoint],
    );
    if (!row) return null;
    await tx.run('UPDATE webhook_deliveries SET claimed_by = ?, lease_until = ? WHERE id = ?', [
      node,
      new Date(now.getTime() + leaseMs).toISOString(),
      row.id,
    ]);
    const endpoint = await tx.one<EndpointRow>('SELECT * FROM webhook_endpoints WHERE id = ?', [row.endpoint_id]);
    return { delivery: (await withLog(tx, [row]))[0]!, endpoint: toEndpoint(endpoint!) };
  });
}

export async function finishWebhookAttempt(db: Db, o: WebhookAttemptOutcome): Promise<boolean> {
  return db.tx(async (tx) => {
    const row = await tx.lockOne<DeliveryRow>("SELECT * FROM webhook_deliveries WHERE id = ? AND claimed_by = ? AND status = 'PENDING'", [
      o.deliveryId,
      o.node,
    ]);
    if (!row) return false;
    const now = nowIso();
    const a = o.attempt;
    await tx.run(
      `INSERT INTO webhook_attempts (delivery_id, attempt, node, started_at, duration_ms, status_code, error) VALUES (?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (delivery_id, attempt) DO NOTHING`,
      [o.deliveryId, a.attempt, a.node, a.startedAt, a.durationMs, a.statusCode, a.error],
    );
    await tx.run(
      `UPDATE webhook_deliveries
          SET status = ?, attempts = ?, next_attempt_at = ?, last_status_code = ?, last_error = ?, last_response = ?,
              claimed_by = NULL, lease_until = NULL, updated_at = ?, delivered_at = ?
        WHERE id = ?`,
      [o.status, a.attempt, o.nextAttemptAt, a.statusCode, a.error, o.response, now, o.status === 'DELIVERED' ? now : null, o.deliveryId],
    );
    if (o.endpointSucceeded) {
      await tx.run('UPDATE webhook_endpoints SET failing_since = NULL WHERE id = ? AND failing_since IS NOT NULL', [row.endpoint_id]);
    } else {
      await tx.run('UPDATE webhook_endpoints SET failing_since = ? WHERE id = ? AND failing_since IS NULL', [a.startedAt, row.endpoint_id]);
    }
    if (o.disableEndpoint !== null) {
      await tx.run('UPDATE webhook_endpoints SET enabled = 0, disabled_reason = ?, updated_at = ? WHERE id = ? AND enabled = 1', [
        o.disableEndpoint,
        now,
        row.endpoint_id,
      ]);
    }
    return true;
  });
}

export async function clearOtherWebhookClaims(db: Db, node: string): Promise<number> {
  return db.run('UPDATE webhook_deliveries SET claimed_by = NULL, lease_until = NULL WHERE claimed_by IS NOT NULL AND claimed_by <> ?', [
    node,
  ]);
}

export async function pruneWebhookDeliveries(db: Db, before: string, limit: number): Promise<number> {
  // A plain read first: most samples find nothing to prune and take no write lock.
  if (!(await db.one("SELECT id FROM webhook_deliveries WHERE status <> 'PENDING' AND updated_at < ? LIMIT 1", [before]))) return 0;
  return db.tx(async (tx) => {
    const ids = (
      await tx.all<{ id: string }>(
        "SELECT id FROM webhook_deliveries WHERE status <> 'PENDING' AND updated_at < ? ORDER BY updated_at LIMIT ?",
        [before, limit],
      )
    ).map((r) => r.id);
    if (ids.length === 0) return 0;
    const list = ids.map(() => '?').join(', ');
    await tx.run(`DELETE FROM webhook_attempts WHERE delivery_id IN (${list})`, ids);
    return tx.run(`DELETE FROM webhook_deliveries WHERE id IN (${list}) AND status <> 'PENDING'`, ids);
  });
}

export async function webhookOutboxStats(db: Tx): Promise<{ depth: number; oldestCreatedAt: string | null }> {
  const r = await db.one<{ n: bigint; oldest: string | null }>(
    "SELECT COUNT(*) AS n, MIN(created_at) AS oldest FROM webhook_deliveries WHERE status = 'PENDING' AND next_attempt_at IS NOT NULL",
  );
  return { depth: Number(r?.n ?? 0), oldestCreatedAt: r?.oldest ?? null };
}
