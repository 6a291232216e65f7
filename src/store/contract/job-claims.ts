// Background work on any node (areas/job-claims.ts): job rows claimed with leases.

export type JobTable = 'batch_jobs' | 'music_projects' | 'voice_designs';

export interface JobClaim {
  table: JobTable;
  key: string;
  node: string;
}

export interface JobClaimStore {
  /** Claim the oldest row matching `pending` (a condition written in code) that no live node
   * holds; its key, or null. */
  claimNextJob(table: JobTable, pending: string, node: string, leaseMs: number, now: Date): Promise<string | null>;
  /** Claim one named row unless a live node holds it. */
  claimJob(claim: JobClaim, leaseMs: number, now: Date): Promise<boolean>;
  /** Extend this node's leases; answers the keys it still holds. */
  renewJobs(table: JobTable, node: string, keys: readonly string[], leaseMs: number, now: Date): Promise<string[]>;
  releaseJob(claim: JobClaim): Promise<void>;
}
