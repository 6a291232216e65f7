// What routes are given: the service's parts, built once by the caller of buildApp.
import type { Logger } from 'pino';
import type { ServiceConfig } from '../config.js';
import type { Engine } from '../engine/types.js';
import type { Metrics } from '../obs/metrics.js';
import type { SessionRegistry } from '../session/registry.js';
import type { RuleAlerts } from '../session/rule-alerts.js';
import type { Store } from '../store/store.js';
import type { BatchRunner } from '../batch/runner.js';
import type { RecordingKeeper } from '../recording/keeper.js';
import type { WebhookWorker } from '../webhooks/delivery-worker.js';
import type { DesignJobs } from '../voices/design-jobs.js';
import type { ArrangementJobs } from '../music/arrangement-jobs.js';
import { API_BASE } from '../core/protocol.js';
import { OutboundPolicy } from '../core/outbound-policy.js';
import type { VoiceFiles } from './voice-files.js';

export interface AppContext {
  config: Readonly<ServiceConfig>;
  store: Store;
  engine: Engine;
  metrics: Metrics;
  log: Logger;
  sessions: SessionRegistry;
  /** Batch transcription (absent: the upload route is not served). */
  batch?: BatchRouteOptions;
  /** Injected clock, so ticket expiry is testable. */
  now: () => Date;
  /** Live rules' evaluator (absent: rules are stored, and read by sessions within its cache time). */
  ruleAlerts?: RuleAlerts;
  /** Redacted recordings (recordAudio; docs/recordings.md). Absent: no recording route. */
  recordings?: RecordingKeeper;
  /** The node is draining before it stops (src/server/drain.ts): no new sockets or resumes,
   * not ready. Absent: never. */
  draining?: () => boolean;
  /** POST /admin/drain: begin what SIGTERM begins (a drain, then the stop), once. Absent: no route. */
  requestDrain?: () => 'draining' | 'stopping';
  /** The node's one recordings store (the keeper's too) and its server keys. */
  files: VoiceFiles;
  /** Background work the routes hand new work to; service.ts starts and stops it. */
  workers: RouteWorkers;
  /** The node's one outbound policy, whose allow-list SIGHUP replaces (service.ts). Absent: one
   * built from the configuration (callbackPolicy). */
  outbound?: OutboundPolicy;
}

/** The policy requests on a user's behalf go through: the node's shared one, else the
 * configuration's (docs/security.md, "Outbound requests"). */
export function callbackPolicy(ctx: { config: Readonly<ServiceConfig>; outbound?: OutboundPolicy }): OutboundPolicy {
  return ctx.outbound ?? new OutboundPolicy({ allowPrivate: ctx.config.callbackAllowPrivate, allowCidrs: ctx.config.callbackAllowCidrs });
}

/** What routes may ask of the node's background workers (src/server/route-workers.ts): new
 * work, never their start or stop. */
export interface RouteWorkers {
  webhooks: Pick<WebhookWorker, 'nudge'>;
  designs: Pick<DesignJobs, 'start'>;
  arrangements: Pick<ArrangementJobs, 'schedule'>;
}

export interface BatchRouteOptions {
  runner: BatchRunner;
  /** Directory for uploads and decodes in flight (and, on one node, the decoded audio of
   * pending jobs: the runner's audio store). */
  dir: string;
  maxUploadBytes: number;
  /** Longest audio one upload may decode to, in seconds (src/batch/limits.ts). */
  maxAudioSeconds: number;
  /** Uploads probed and decoded at once. */
  maxConcurrentDecodes: number;
}

export const API = API_BASE;
export const MODEL_ID = 'svc_stt_realtime_v1';

export function streamPath(sessionId: string): string {
  return `${API}/stt/realtime/sessions/${sessionId}/stream`;
}
