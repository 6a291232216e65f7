// Voice designs: synthesis from a description and the callback's delivery (areas/voice-designs.ts).

export type VoiceDesignStatus = 'PENDING' | 'COMPLETED' | 'FAILED';
export type CallbackState = 'NONE' | 'PENDING' | 'DELIVERED' | 'FAILED';

export interface VoiceDesignRecord {
  id: string; // vd_...
  accountId: string;
  description: string;
  previewText: string;
  callbackUrl: string | null;
  status: VoiceDesignStatus;
  params: Record<string, unknown>;
  previewSha256: string | null;
  previewBytes: number | null;
  error: string | null;
  callback: { state: CallbackState; attempts: number; lastStatus: number | null; lastError: string | null; nextAt: string | null };
  createdAt: string;
  updatedAt: string;
}

export interface VoiceDesignStore {
  createVoiceDesign(
    input: Omit<VoiceDesignRecord, 'status' | 'previewSha256' | 'previewBytes' | 'error' | 'callback' | 'updatedAt'>,
  ): Promise<VoiceDesignRecord>;
  getVoiceDesign(designId: string, accountId: string | null): Promise<VoiceDesignRecord | null>;
  /** createVoiceDesign unless the account already holds `maxPending` PENDING designs (then
   * null); the count and the insert are one transaction. */
  createVoiceDesignIfRoom(
    input: Omit<VoiceDesignRecord, 'status' | 'previewSha256' | 'previewBytes' | 'error' | 'callback' | 'updatedAt'>,
    maxPending: number,
  ): Promise<VoiceDesignRecord | null>;
  /** PENDING -> COMPLETED (with the preview) or FAILED; the callback becomes PENDING when a
   * URL was given. No effect on a design that already left PENDING. With `node`, no effect
   * either unless that node holds the design's job claim (here and in the two below). */
  finishVoiceDesign(
    designId: string,
    outcome: { previewSha256: string; previewBytes: number } | { error: string },
    now: Date,
    node?: string,
  ): Promise<VoiceDesignRecord | null>;
  /** True when stored (false: the node does not hold the claim). */
  recordCallbackAttempt(designId: string, callback: VoiceDesignRecord['callback'], now: Date, node?: string): Promise<boolean>;
  /** Undo of a preview whose file could not be published after finishVoiceDesign committed
   * it: COMPLETED with that preview -> FAILED with `error`, preview cleared (the callback
   * state is kept, so the failure is what gets delivered). No effect otherwise. */
  failVoiceDesignPreview(
    designId: string,
    previewSha256: string,
    error: string,
    now: Date,
    node?: string,
  ): Promise<VoiceDesignRecord | null>;
  /** Designs whose synthesis or callback delivery is still to do (start-up resume). */
  listUnfinishedVoiceDesigns(): Promise<VoiceDesignRecord[]>;
}
