// Live rules (areas/rules.ts, docs/rules.md): an account's rules, and the alerts they raise
// written to the webhook outbox.
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
}
