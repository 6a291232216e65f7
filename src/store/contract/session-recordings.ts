// Redacted recordings of sessions and batch jobs (areas/session-recordings.ts;
// docs/recordings.md). The audio itself is content-addressed (src/store/recordings.ts: files in
// the data dir on one node, the blobs table when nodes share PostgreSQL); these rows name it.

/** A run of a live session's audio, masked where its final redacted words, waiting in the
 * store for the session to close (a node that takes the session over adds to the same rows). */
export interface RecordingPiece {
  transcriptionId: string;
  /** Session-wide samples at the input rate: [startSample, endSample). */
  startSample: bigint;
  endSample: bigint;
  sampleRate: number;
  /** 16-bit little-endian PCM, deflated (node:zlib). */
  pcmDeflated: Buffer;
  createdAt: string;
}

/** The finished recording of a History row. */
export interface SessionRecordingRecord {
  transcriptionId: string;
  accountId: string;
  sha256: string;
  format: 'flac';
  sampleRate: number;
  channels: number;
  samples: bigint;
  sizeBytes: number;
  createdAt: string;
}

export interface SessionRecordingStore {
  /** Store a piece (a piece stored again at the same start replaces it). */
  putRecordingPiece(piece: RecordingPiece): Promise<void>;
  /** True when a row has pieces (a recording not finished yet). */
  hasRecordingPieces(transcriptionId: string): Promise<boolean>;
  /** A row's pieces in sample order. */
  listRecordingPieces(transcriptionId: string): Promise<RecordingPiece[]>;
  /** Name the finished recording of a row (replacing any earlier one) and delete its pieces,
   * in one transaction. Returns the content hashes nothing references any more (the replaced
   * recording's), for the caller to remove. */
  saveSessionRecording(record: SessionRecordingRecord): Promise<string[]>;
  /** The account's recording of a row; null when there is none or the row is another
   * account's. */
  getSessionRecording(transcriptionId: string, accountId: string): Promise<SessionRecordingRecord | null>;
  /** Recordings older than their account's recordings retention at `now`, oldest first. */
  listExpiredRecordings(now: Date, limit: number): Promise<Array<{ transcriptionId: string; accountId: string }>>;
  /** Delete a row's recording and pieces (the transcript stays). Returns the content hashes
   * nothing references any more. */
  eraseSessionRecording(transcriptionId: string, accountId: string): Promise<string[]>;
}
