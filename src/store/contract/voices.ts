// The voice library: custom voices and their recordings (areas/voices.ts).

export interface VoiceRecord {
  id: string; // vc_...
  accountId: string;
  name: string;
  type: string;
  feature: string;
  channel: string;
  designId: string | null;
  fileCount: number;
  totalFileSize: number;
  createdAt: string;
}

export interface NewRecording {
  sha256: string;
  format: string;
  sizeBytes: number;
}

/** A voice as created: its counts follow from `recordings`. */
export type NewVoice = Omit<VoiceRecord, 'fileCount' | 'totalFileSize'> & { recordings: NewRecording[] };

export interface VoiceStore {
  /** Insert a voice with its recordings. A design saved before returns its voice instead. */
  createVoice(input: NewVoice): Promise<{ kind: 'created' | 'exists'; voice: VoiceRecord }>;
  getVoice(voiceId: string, accountId: string): Promise<VoiceRecord | null>;
  listVoices(accountId: string): Promise<VoiceRecord[]>;
  /** Append recordings unless the voice would then hold more than maxFiles; the count is
   * checked inside the transaction, so concurrent uploads cannot pass the limit together. */
  addVoiceRecordings(
    voiceId: string,
    accountId: string,
    recordings: NewRecording[],
    maxFiles: number,
    now: Date,
  ): Promise<{ kind: 'ok'; voice: VoiceRecord; firstIndex: number } | { kind: 'not_found' } | { kind: 'limit'; current: number }>;
  /** Undo of addVoiceRecordings (used when publishing the files fails). */
  dropVoiceRecordingsFrom(voiceId: string, firstIndex: number): Promise<string[]>;
  /** Delete a custom voice and its recording rows; returns the content hashes no longer
   * referenced anywhere (their files can go), or null when the voice is missing/foreign. */
  deleteVoice(voiceId: string, accountId: string): Promise<string[] | null>;
}
