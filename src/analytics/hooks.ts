// What the store's analysis of a finished call needs from above it (areas/analytics.ts): the
// RE2 engine and the entity detectors for pattern and entity conditions, as the live rules
// read them (src/session/rule-alerts.ts), and the per-category match counter.
import type { EntityCategory } from '../core/session-options.js';
import type { Metrics } from '../obs/metrics.js';
import { useAnalyticsHooks } from '../store/areas/analytics.js';
import { detectEntities } from '../text/entities.js';
import { findRulePattern } from '../text/rule-pattern.js';

export function installAnalyticsHooks(metrics: Metrics): void {
  useAnalyticsHooks({
    matchers: { pattern: findRulePattern, entities: (text, category) => detectEntities(text, [category as EntityCategory]) },
    matched: (ids) => {
      for (const category of ids) metrics.categoryMatches.inc({ category });
    },
  });
}
