// Music projects: briefs, quotes and the arrangement job's results (areas/music.ts).

/** ARRANGEMENT_GENERATING -> ARRANGEMENT_READY (job done) -> GENERATION_QUEUED (generate). */
export type MusicProjectStatus = 'ARRANGEMENT_GENERATING' | 'ARRANGEMENT_READY' | 'GENERATION_QUEUED' | 'ARRANGEMENT_FAILED';

export interface MusicQuote {
  quoteId: string; // mq_...
  characters: string;
  arrangementVersion: number;
  expiresAt: string;
  createdAt: string;
}

export interface MusicProjectRecord {
  id: string; // mup_...
  accountId: string;
  status: MusicProjectStatus;
  brief: Record<string, unknown>;
  arrangementVersion: number;
  arrangement: Record<string, unknown> | null;
  activeQuote: MusicQuote | null;
  generation: Record<string, unknown> | null;
  createdAt: string;
  updatedAt: string;
}

export type MusicOutcome =
  | { kind: 'ok'; project: MusicProjectRecord }
  | { kind: 'not_found' }
  | { kind: 'busy'; status: MusicProjectStatus }
  | { kind: 'stale_quote' }
  | { kind: 'insufficient'; balance: bigint };

export interface MusicStore {
  createMusicProject(input: {
    id: string;
    accountId: string;
    brief: Record<string, unknown>;
    createdAt: string;
  }): Promise<MusicProjectRecord>;
  getMusicProject(projectId: string, accountId: string): Promise<MusicProjectRecord | null>;
  /** Whole-brief replace (from ARRANGEMENT_READY or ARRANGEMENT_FAILED): version + 1, quote dropped. */
  replaceMusicBrief(projectId: string, accountId: string, brief: Record<string, unknown>, now: Date): Promise<MusicOutcome>;
  /** A new quote becomes the active one (ARRANGEMENT_READY only). */
  createMusicQuote(projectId: string, accountId: string, quote: (p: MusicProjectRecord) => MusicQuote, now: Date): Promise<MusicOutcome>;
  /** Debit the active quote and queue generation; any other quote id is stale. */
  startMusicGeneration(
    projectId: string,
    accountId: string,
    quoteId: string,
    now: Date,
    generation: (q: MusicQuote) => Record<string, unknown>,
  ): Promise<MusicOutcome>;
  /** Job end: store the plan if the project still waits for this arrangement version. */
  completeArrangement(projectId: string, arrangementVersion: number, plan: Record<string, unknown>, now: Date): Promise<boolean>;
  listMusicProjectsByStatus(status: MusicProjectStatus): Promise<MusicProjectRecord[]>;
  /** The job gave up: ARRANGEMENT_GENERATING -> ARRANGEMENT_FAILED if the project still waits
   * for this arrangement version. */
  failArrangement(projectId: string, arrangementVersion: number, now: Date): Promise<boolean>;
}
