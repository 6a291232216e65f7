// Live rules at work (docs/rules.md): every partial and final a session fans out is read
// against its account's rules (src/core/rules-match.ts); a match is an `alert` event on the
// session's socket and its watchers' (sent the same way as the final, right after it), an
// `alert.triggered` webhook through the outbox, and a count in scribed_rule_alerts_total.
//
// One per node, given to every live session as LiveSessionDeps.observeEvent. It keeps, per
// session, where its speech last ended (silence) and the rules already fired per segment (a
// rule alerts once a segment, even when it also reads partials); per call, each leg's recent
// runs of speech on the wall clock (talk-over across legs). A session's events are read in
// order on a chain of its own, so an account's rules, read from the store once and then
// cached, never hold back the session's sockets. Phrase rules with `spot` also alert on what
// the session's keyphrase search detects (phrase-spotting.ts: `spotted`, source "spotted").
import type { Logger } from 'pino';
import { newId } from '../core/ids.js';
import type { AlertEvent, FinalEvent, PartialEvent, ServerEvent } from '../core/protocol.js';
import { segmentId, serverEvent } from '../core/protocol.js';
import { spotPhrase } from '../core/rules.js';
import { alertWebhookEvent } from '../core/rules-alert.js';
import {
  matchText,
  overlapLongerThan,
  ruleReads,
  silenceBefore,
  speechRuns,
  type Interval,
  type TextMatchers,
} from '../core/rules-match.js';
import type { EntityCategory } from '../core/session-options.js';
import type { Metrics } from '../obs/metrics.js';
import type { RuleRecord, Store } from '../store/store.js';
import { detectEntities } from '../text/entities.js';
import { findRulePattern } from '../text/rule-pattern.js';
import type { SessionContext } from './session-context.js';
import type { SpotDetection } from './phrase-spotting.js';

/** How long an account's rules are read from the cache: a rule written on another node
 * applies within this (on this node, the routes drop the cache at once). */
const RULES_CACHE_MS = 2_000;
/** A pause in one leg's words shorter than this does not end its run of speech. */
const SPEECH_JOIN_MS = 300;
/** How long a leg's speech is kept for talk-over with the call's other legs. */
const TALK_OVER_WINDOW_MS = 120_000;
/** A spotted phrase and a transcript match of the same rule this close (ms) are one alert. */
const SPOT_SLACK_MS = 1_000;
/** Sessions not heard of for this long (moved to another node) are forgotten. */
const IDLE_SESSION_MS = 30 * 60_000;

const MATCHERS: TextMatchers = {
  pattern: findRulePattern,
  entities: (text, category) => detectEntities(text, [category as EntityCategory]),
};

interface SessionRules {
  speaker: string | null;
  callId: string | null;
  lastSpeechEndMs: number;
  /** Rules fired per segment id (the open segment's and the latest final's matter). */
  fired: Map<string, Set<string>>;
  /** Phrase spotting: where each spotting rule last alerted (session ms), so the transcript's
   * match of the same words and the search's detection alert once between them. */
  spots: Map<string, Interval[]>;
  chain: Promise<void>;
  seenAt: number;
}

export interface RuleAlertsDeps {
  store: Store;
  metrics: Metrics;
  log: Logger;
  now?: () => number;
}

export class RuleAlerts {
  private readonly rulesByAccount = new Map<string, { at: number; rules: Promise<RuleRecord[]> }>();
  private readonly sessions = new Map<string, SessionRules>();
  /** callId -> sessionId -> that leg's speech runs on the wall clock (ms since the epoch). */
  private readonly calls = new Map<string, Map<string, { speaker: string | null; runs: Interval[] }>>();
  private readonly now: () => number;
  private observed = 0;

  constructor(private readonly deps: RuleAlertsDeps) {
    this.now = deps.now ?? Date.now;
  }

  /** The account's rules changed (the routes on this node): read them again. */
  invalidate(accountId: string): void {
    this.rulesByAccount.delete(accountId);
  }

  /** LiveSessionDeps.observeEvent. */
  readonly observe = (ctx: SessionContext, event: ServerEvent, emit: (e: ServerEvent) => void): void => {
    if (event.type === 'closed') {
      const s = this.sessions.get(ctx.id);
      if (s) void s.chain.then(() => this.forget(ctx.id, s));
      return;
    }
    if (event.type !== 'final' && event.type !== 'partial') return;
    if (++this.observed % 1000 === 0) this.sweep();
    let s = this.sessions.get(ctx.id);
    if (!s) {
      s = this.track(ctx);
    }
    const state = s;
    state.seenAt = this.now();
    // Where the audio stood when the event was sent: talk-over maps this leg's times to the wall clock with it.
    const capturedMs = (Number(ctx.cursor.capturedSamples) * 1000) / ctx.rate;
    const wallAt = this.now();
    state.chain = state.chain
      .then(() => this.evaluate(ctx, state, event, emit, wallAt - capturedMs))
      .catch((err: unknown) => ctx.log.warn({ err }, 'live rules not evaluated'));
  };

  private track(ctx: SessionContext): SessionRules {
    const s: SessionRules = {
      speaker: null,
      callId: null,
      lastSpeechEndMs: 0,
      fired: new Map(),
      spots: new Map(),
      chain: this.loadLeg(ctx),
      seenAt: this.now(),
    };
    this.sessions.set(ctx.id, s);
    return s;
  }

  /** PhraseSpottingDeps.spotted: a phrase the session's keyphrase search detected alerts each
   * enabled spotting rule that lists it and reads this leg, unless that rule already alerted
   * on these words from the transcript. */
  readonly spotted = (ctx: SessionContext, d: SpotDetection, emit: (e: ServerEvent) => void): Promise<void> => {
    const s = this.sessions.get(ctx.id) ?? this.track(ctx);
    s.seenAt = this.now();
    s.chain = s.chain
      .then(async () => {
        for (const rule of await this.rules(ctx.accountId)) {
          const c = rule.condition;
          if (c.kind !== 'phrases' || !c.spot || !ruleReads(rule, s.speaker, true)) continue;
          if (!c.phrases.some((p) => spotPhrase(p) === d.phrase)) continue;
          if (this.alertedNear(s, rule.id, d)) continue;
          this.noteSpot(s, rule.id, d);
          this.raise(
            ctx,
            emit,
            serverEvent.alert({
              alertId: newId('alr', this.now()),
              ruleId: rule.id,
              ruleName: rule.name,
              condition: 'phrases',
              segmentId: segmentId(ctx.segment?.index ?? ctx.nextSegmentIndex),
              final: true,
              text: d.phrase,
              match: { text: d.phrase, start: 0, end: d.phrase.length },
              speaker: s.speaker,
              callId: s.callId,
              startMs: d.startMs,
              endMs: d.endMs,
              source: 'spotted',
            }),
          );
        }
      })
      .catch((err: unknown) => ctx.log.warn({ err }, 'spotted phrase not evaluated'));
    return s.chain;
  };

  /** Whether a spotting rule alerted within this span already (either source). */
  private alertedNear(s: SessionRules, ruleId: string, span: Interval): boolean {
    return (s.spots.get(ruleId) ?? []).some((a) => a.startMs <= span.endMs + SPOT_SLACK_MS && span.startMs <= a.endMs + SPOT_SLACK_MS);
  }

  private noteSpot(s: SessionRules, ruleId: string, span: Interval): void {
    const list = s.spots.get(ruleId) ?? [];
    list.push({ startMs: span.startMs, endMs: span.endMs });
    s.spots.set(ruleId, list.slice(-20));
  }

  private async loadLeg(ctx: SessionContext): Promise<void> {
    const record = await this.deps.store.getSession(ctx.id, ctx.accountId);
    const s = this.sessions.get(ctx.id);
    if (record && s) {
      s.speaker = record.speaker;
      s.callId = record.callId;
    }
  }

  private rules(accountId: string): Promise<RuleRecord[]> {
    const cached = this.rulesByAccount.get(accountId);
    if (cached && this.now() - cached.at < RULES_CACHE_MS) return cached.rules;
    const rules = this.deps.store.listRules(accountId);
    this.rulesByAccount.set(accountId, { at: this.now(), rules });
    rules.catch(() => this.rulesByAccount.delete(accountId));
    return rules;
  }

  private async evaluate(
    ctx: SessionContext,
    s: SessionRules,
    event: FinalEvent | PartialEvent,
    emit: (e: ServerEvent) => void,
    wallOriginMs: number,
  ): Promise<void> {
    const final = event.type === 'final';
    const rules = (await this.rules(ctx.accountId)).filter((r) => ruleReads(r, s.speaker, final));
    const words = final ? (event.words ?? []).map((w) => ({ startMs: w.start.ms, endMs: w.end.ms })) : [];
    const speechStartMs = words[0]?.startMs ?? event.start.ms;
    const speechEndMs = words[words.length - 1]?.endMs ?? event.end.ms;
    let fired = s.fired.get(event.segmentId);
    const fire = (
      rule: RuleRecord,
      f: Omit<AlertEvent, 'type' | 'alertId' | 'ruleId' | 'ruleName' | 'condition' | 'segmentId' | 'final' | 'text' | 'speaker' | 'callId'>,
    ) => {
      if (!fired) {
        fired = new Set();
        s.fired.set(event.segmentId, fired);
        // Only the latest segments can still fire: older ids are let go.
        for (const id of s.fired.keys()) if (s.fired.size > 4 && id !== event.segmentId) s.fired.delete(id);
      }
      fired.add(rule.id);
      this.raise(
        ctx,
        emit,
        serverEvent.alert({
          alertId: newId('alr', this.now()),
          ruleId: rule.id,
          ruleName: rule.name,
          condition: rule.condition.kind,
          segmentId: event.segmentId,
          final,
          text: event.text,
          speaker: s.speaker,
          callId: s.callId,
          ...f,
        }),
      );
    };
    let mine: Interval[] | null = null;
    for (const rule of rules) {
      if (fired?.has(rule.id)) continue;
      const c = rule.condition;
      if (c.kind === 'silence') {
        const gap = event.text.trim() === '' ? null : silenceBefore(s.lastSpeechEndMs, speechStartMs, c.seconds);
        if (gap) fire(rule, { match: null, ...gap });
      } else if (c.kind === 'talkOver') {
        mine ??= this.recordSpeech(ctx.id, s, words, wallOriginMs);
        const other = this.talkedOver(ctx.id, s, mine, c.seconds);
        if (other)
          fire(rule, {
            match: null,
            startMs: Math.round(other.overlap.startMs - wallOriginMs),
            endMs: Math.round(other.overlap.endMs - wallOriginMs),
            otherSpeaker: other.speaker,
          });
      } else {
        const span = matchText(c, event.text, MATCHERS);
        const spotting = c.kind === 'phrases' && c.spot !== undefined;
        const segment = { startMs: event.start.ms, endMs: event.end.ms };
        if (span && spotting && this.alertedNear(s, rule.id, segment)) continue;
        if (span && spotting) this.noteSpot(s, rule.id, segment);
        if (span)
          fire(rule, {
            match: { text: event.text.slice(span.start, span.end), start: span.start, end: span.end },
            startMs: event.start.ms,
            endMs: event.end.ms,
          });
      }
    }
    if (final) {
      if (event.text.trim() !== '') s.lastSpeechEndMs = Math.max(s.lastSpeechEndMs, speechEndMs);
      if (mine === null && s.callId !== null) this.recordSpeech(ctx.id, s, words, wallOriginMs);
    }
  }

  /** This leg's runs of speech in a final, kept on the wall clock for the call's other legs. */
  private recordSpeech(sessionId: string, s: SessionRules, words: Interval[], wallOriginMs: number): Interval[] {
    const runs = speechRuns(words, SPEECH_JOIN_MS).map((r) => ({ startMs: r.startMs + wallOriginMs, endMs: r.endMs + wallOriginMs }));
    if (s.callId === null) return runs;
    let legs = this.calls.get(s.callId);
    if (!legs) this.calls.set(s.callId, (legs = new Map()));
    const leg = legs.get(sessionId) ?? { speaker: s.speaker, runs: [] };
    const horizon = this.now() - TALK_OVER_WINDOW_MS;
    leg.runs = [...leg.runs.filter((r) => r.endMs >= horizon), ...runs];
    legs.set(sessionId, leg);
    return runs;
  }

  private talkedOver(
    sessionId: string,
    s: SessionRules,
    mine: Interval[],
    seconds: number,
  ): { overlap: Interval; speaker: string | null } | null {
    if (s.callId === null) return null;
    for (const [otherId, leg] of this.calls.get(s.callId) ?? []) {
      if (otherId === sessionId) continue;
      const overlap = overlapLongerThan(mine, leg.runs, seconds);
      if (overlap) return { overlap, speaker: leg.speaker };
    }
    return null;
  }

  private raise(ctx: SessionContext, emit: (e: ServerEvent) => void, alert: AlertEvent): void {
    emit(alert);
    this.deps.metrics.ruleAlerts.inc({ condition: alert.condition });
    ctx.log.info({ ruleId: alert.ruleId, alertId: alert.alertId, segmentId: alert.segmentId }, 'live rule alert');
    const webhook = alertWebhookEvent(
      alert,
      { sessionId: ctx.id, transcriptionId: ctx.transcriptionId },
      new Date(this.now()).toISOString(),
    );
    void this.deps.store
      .raiseRuleAlert(ctx.accountId, webhook)
      .catch((err: unknown) => ctx.log.warn({ err, alertId: alert.alertId }, 'alert webhook not written'));
  }

  /** A leg's speech stays for the call's other legs until none of them is live here. */
  private forget(sessionId: string, s: SessionRules): void {
    if (this.sessions.get(sessionId) === s) this.sessions.delete(sessionId);
    if (s.callId === null) return;
    if (![...this.sessions.values()].some((o) => o.callId === s.callId)) this.calls.delete(s.callId);
  }

  private sweep(): void {
    const idle = this.now() - IDLE_SESSION_MS;
    for (const [id, s] of this.sessions) if (s.seenAt < idle) this.forget(id, s);
  }
}
