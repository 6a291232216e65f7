// Files every node reads (areas/shared-files.ts).

/** Blobs (recordings, design previews) and server keys in the store, for nodes sharing
 * PostgreSQL; the embedded store keeps them as files (src/store/recordings.ts, server-key.ts). */
export interface SharedFileStore {
  /** Insert the blob unless stored; `bytes` is called only when it is missing. True when inserted. */
  putBlob(sha256: string, sizeBytes: number, bytes: () => Promise<Buffer>, now: Date): Promise<boolean>;
  getBlob(sha256: string): Promise<Buffer | null>;
  /** Delete those of `shas` no voice recording or design preview references (checked under
   * the blob's row lock, in the delete's transaction); returns the hashes deleted. */
  deleteUnreferencedBlobs(shas: readonly string[]): Promise<string[]>;
  /** The key named `name`; `candidate` becomes it when none is stored (first writer wins). */
  loadServerKey(name: string, candidate: Buffer, now: Date): Promise<Buffer>;
  /** Void the voice design claims of every other node (embedded store: one node). */
  clearOtherVoiceDesignClaims(node: string): Promise<void>;
}
