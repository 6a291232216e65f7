// Types of protocol.js for the TypeScript tests (the page itself is plain JavaScript).
export declare const API: string;
export declare const NEED_TICKET: string;
export declare const TICKET_MESSAGE: string;
export declare const LOW_CONFIDENCE: number;
export declare function isSessionId(v: unknown): boolean;
export declare function isTicket(v: unknown): boolean;
export interface Fragment {
  session: string | null;
  ticket: string | null;
  watch: boolean;
  renew: URL | null;
  origin: string | null;
  history: string | null;
  problems: string[];
}
export declare function parseFragment(hash: string, base: string): Fragment;
export declare function fragmentWithoutTicket(hash: string): string;
export declare function streamSocketUrl(pageUrl: string, session: string, ticket: string): string;
export declare function watchSocketUrl(pageUrl: string, session: string, ticket: string): string;
export declare function historyLink(template: string, transcriptionId: string, format: string, base: string): string | null;
export declare function encodeFrame(epoch: number, sampleOffset: number, payload: Uint8Array): Uint8Array;
export declare class CaptureBuffer {
  constructor(bytesPerSample: number, maxSamples: number);
  captured: number | null;
  pending: { start: number; bytes: Uint8Array }[];
  readonly pendingSamples: number;
  ready(epoch: number, sampleOffset: number, capturedSamples: string | number): Uint8Array[];
  detached(): void;
  add(bytes: Uint8Array): Uint8Array | null;
  ack(capturedSamples: string | number): void;
}
export declare function clock(ms: number): string;
export interface Run {
  text: string;
  low: boolean;
  confidence: number | null;
}
export declare function finalRuns(final: { text: string; words?: Array<{ word: string; confidence: number | null }> }): Run[];
