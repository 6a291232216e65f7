// Live rules (areas/rules.ts, docs/rules.md): an account's rules, and the alerts they raise
// written to the webhook outbox and kept with their session and call.
import type { RuleCondition } from '../../core/rules.js';
import type { WebhookEvent } from '../../core/webhook-events.js';

export interface RuleRecord {
  id: string;
  accountId: string;
  name: string;
  condition: RuleCondition;
  speaker: string | null;
  partials: boolean;
  enabled: boolean;
  createdAt: string;
  updatedAt: string;
}

export interface CreateRuleInput {
  id: string;
  accountId: string;
  name: string;
  condition: RuleCondition;
  speaker: string | null;
  partials: boolean;
  enabled: boolean;
  createdAt: string;
}

export interface RuleChange {
  name?: string;
  condition?: RuleCondition;
  speaker?: string | null;
  partials?: boolean;
  enabled?: boolean;
}

export interface RuleStore {
  /** Null when the account already has `maxPerAccount` rules (counted under the account's lock). */
  createRule(input: CreateRuleInput, maxPerAccount: number): Promise<RuleRecord | null>;
  /** The account's rules, oldest first. */
  listRules(accountId: string): Promise<RuleRecord[]>;
  /** Null when missing or another account's. */
  getRule(ruleId: string, accountId: string): Promise<RuleRecord | null>;
  updateRule(ruleId: string, accountId: string, change: RuleChange, now: Date): Promise<RuleRecord | null>;
  /** False when missing or another account's. */
  deleteRule(ruleId: string, accountId: string): Promise<boolean>;
  /** An alert's `alert.triggered` webhook written to the outbox (one delivery per subscribed,
   * enabled endpoint); answers how many deliveries were written. */
  raiseRuleAlert(accountId: string, event: WebhookEvent): Promise<number>;
  /** The alerts raised in a call (call_...) or a History row (stt_...), kept when they were
   * raised, in time order; another account's read as none. */
  listKeptAlerts(subjectId: string, accountId: string): Promise<KeptAlert[]>;
}

/** A live rule's alert as it is kept with its session and call (raiseRuleAlert writes it). */
export interface KeptAlert {
  alertId: string;
  transcriptionId: string;
  callId: string | null;
  ruleId: string;
  ruleName: string;
  condition: string;
  /** Matched in the transcript, or spotted in the audio (phrase spotting). */
  source: 'transcript' | 'spotted';
  speaker: string | null;
  /** On the leg's (session's) audio time line. */
  startMs: number;
  endMs: number;
  /** What matched (the phrase, the pattern's text), or the segment's text. */
  text: string;
  raisedAt: string;
}
