// Interpretation projects and their targets' reservation cycles (areas/interpretation.ts).

export type InterpretationTargetState = 'QUEUED' | 'PROCESSING' | 'COMPLETED' | 'FAILED_RELEASED';

/** A failed target's offer for its next reservation cycle (GET .../retry-plan). */
export interface RetryPlan {
  nextReservationCycle: number;
  characters: bigint;
  rateVersion: string;
  expiresAt: string;
}

export type RetryPlanOutcome =
  { kind: 'plan'; target: InterpretationTargetRecord } | { kind: 'not_found' } | { kind: 'not_failed'; state: InterpretationTargetState };

export interface InterpretationTargetRecord {
  id: string; // it_...
  projectId: string; // ip_...
  accountId: string;
  language: string;
  generationId: string; // ia_...: the logical generation, kept across retries
  state: InterpretationTargetState;
  reservationCycle: number;
  reservedCharacters: bigint;
  /** Code points of the source the price is computed from. */
  sourceUnits: bigint;
  plan: RetryPlan | null;
  createdAt: string;
  updatedAt: string;
}

export interface InterpretationProjectRecord {
  id: string;
  accountId: string;
  title: string;
  sourceLanguage: string;
  source: { text: string } | null;
  createdAt: string;
  targets: InterpretationTargetRecord[];
}

export interface NewInterpretationProject {
  id: string;
  accountId: string;
  title: string;
  sourceLanguage: string;
  source: { text: string } | null;
  sourceUnits: bigint;
  createdAt: string;
  targets: { id: string; language: string; generationId: string; characters: bigint }[];
}

export interface InterpretationRetryInput {
  accountId: string;
  projectId: string;
  targetId: string;
  idempotencyKey: string;
  requestHash: string;
  request: { nextReservationCycle: number; characters: bigint; rateVersion: string };
  now: Date;
  /** Why a request does not confirm the current plan (core/interpretation.ts), or null. */
  refusal: (target: InterpretationTargetRecord) => string | null;
  /** The result body stored under the key and returned, built from the updated target. */
  result: (target: InterpretationTargetRecord) => Record<string, unknown>;
}

export type InterpretationRetryOutcome =
  | { kind: 'retried'; result: Record<string, unknown> }
  | { kind: 'replayed'; result: Record<string, unknown> }
  | { kind: 'key_mismatch' }
  | { kind: 'not_found' }
  | { kind: 'refused'; reason: string }
  | { kind: 'insufficient'; balance: bigint };

export interface InterpretationStore {
  /** Insert a project and its QUEUED targets, reserving each target's first cycle from the
   * balance in the same transaction; null (nothing written) when the balance is short. */
  createInterpretationProject(input: NewInterpretationProject): Promise<InterpretationProjectRecord | null>;
  getInterpretationProject(projectId: string, accountId: string): Promise<InterpretationProjectRecord | null>;
  /** Return the target's unexpired plan or issue a new one (computed by `plan`), for a
   * FAILED_RELEASED target of this project and account. */
  issueRetryPlan(
    projectId: string,
    targetId: string,
    accountId: string,
    now: Date,
    plan: (target: InterpretationTargetRecord) => RetryPlan,
    reusable: (plan: RetryPlan) => boolean,
  ): Promise<RetryPlanOutcome>;
  /** The whole retry in one transaction: key lookup, ownership, plan check, debit, state. */
  retryInterpretationTarget(input: InterpretationRetryInput): Promise<InterpretationRetryOutcome>;
  /** Operator/worker transitions. fail: QUEUED|PROCESSING -> FAILED_RELEASED, reservation
   * credited back; start: QUEUED -> PROCESSING; complete: PROCESSING|QUEUED -> COMPLETED,
   * reservation consumed. Throws NOT_FOUND / VALIDATION_FAILED. */
  transitionInterpretationTarget(
    targetId: string,
    to: 'PROCESSING' | 'COMPLETED' | 'FAILED_RELEASED',
    now: Date,
  ): Promise<InterpretationTargetRecord>;
}
