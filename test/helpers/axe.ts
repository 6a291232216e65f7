// axe-core in a Playwright page: the desk's and console's accessibility checks.
import path from 'node:path';
import { expect } from 'vitest';
import type { Page } from 'playwright-core';

const AXE = path.resolve(import.meta.dirname, '../../node_modules/axe-core/axe.min.js');

/** axe-core's WCAG 2 A/AA rules and best practices; `checked` must be among the rules that ran
 * and passed (so a page with no form does not claim its labels were checked). The page's
 * context needs `bypassCSP` so the script can be added. */
export async function axeViolations(p: Page, checked = ['color-contrast', 'label', 'button-name']): Promise<string[]> {
  await p.addScriptTag({ path: AXE });
  const result = (await p.evaluate(() =>
    (globalThis as any).axe.run((globalThis as any).document, { runOnly: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'best-practice'] }),
  )) as {
    violations: Array<{ id: string; help: string; nodes: Array<{ target: string[] }> }>;
    passes: Array<{ id: string }>;
  };
  expect(result.passes.map((x) => x.id)).toEqual(expect.arrayContaining(checked));
  return result.violations.map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).join(', ')})`);
}
