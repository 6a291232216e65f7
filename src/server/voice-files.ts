// What the voice routes and the voice design routes are given besides the context.
import type { RecordingStore } from '../store/recordings.js';
import type { ServerKeys } from '../store/server-key.js';

/** Where published recordings and the server keys live (built by buildApp for the store). */
export interface VoiceFiles {
  recordings: RecordingStore;
  keys: ServerKeys;
}
