// Types of call.js for the TypeScript tests (the page itself is plain JavaScript).
export declare const MAX_LEGS: number;
export declare function isCallId(v: unknown): boolean;
export declare function isSpeaker(v: unknown): boolean;
export interface CallLeg {
  speaker: string;
  session: string;
  ticket: string | null;
}
export interface CallFragment {
  call: string | null;
  legs: CallLeg[];
  renew: URL | null;
  origin: string | null;
  history: string | null;
  problems: string[];
}
export declare function parseCallFragment(hash: string, base: string): CallFragment;
export declare function callFragmentWithoutTickets(hash: string): string;
export declare function callHistoryLink(template: string, callId: string, format: string, base: string): string | null;
export declare function timelineIndex(lines: Array<{ startMs: number; leg: number }>, line: { startMs: number; leg: number }): number;
