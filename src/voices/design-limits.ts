// Limits on voice design work: espeak-ng runs are CPU-bound child processes, so at most a
// few run at once (the rest wait, PENDING in the store), and an account may hold only so
// many PENDING designs, so one caller cannot queue unbounded work. docs/api.md, Voice design.

/** Environment variable: espeak-ng syntheses run at once (1-16; read in src/config.ts). */
export const DESIGN_CONCURRENCY_ENV = 'SCRIBED_VOICE_DESIGN_CONCURRENCY';
export const DEFAULT_DESIGN_CONCURRENCY = 2;
export const MAX_DESIGN_CONCURRENCY = 16;
/** PENDING (not yet synthesized) designs one account may hold; a further POST is 429. */
export const MAX_PENDING_DESIGNS_PER_ACCOUNT = 20;
