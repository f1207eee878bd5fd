// The order vitest starts a run's files in: the long ones first. Vitest orders by its own cache
// of the last run's durations, which a fresh clone (CI, a new user) does not have; it then starts
// the largest files first, and a long file that is short on disk starts late and runs alone at
// the end. In the fresh-clone run of 495c7ff (2026-11-29) the webhook outage (209 s, a
// 2-minute outage by design) started at 797 s of a 1,070 s service project: the other two forks
// had finished long before it. Here the files measured longest in that run start first, longest
// first; every other file keeps vitest's order after them. A stale figure costs only order.
import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/** Seconds each took in that run (test/ paths; files of 30 s and more, the browser project's excepted: it runs one at a time). */
const MEASURED_S: Record<string, number> = {
  'test/apis/webhooks/outage.test.ts': 209,
  'test/start.test.ts': 198,
  'test/monitors/monitors.test.ts': 80,
  'test/admin/cli.test.ts': 70,
  'test/workflows/scrape-budget.test.ts': 60,
  'test/faults/temporal-outage.test.ts': 56,
  'test/billing/stripe/catalog.test.ts': 56,
  'test/tracking/worker-faults.test.ts': 55,
  'test/temporal/worker-roles.test.ts': 49,
  'test/tracking/tracking-limits.test.ts': 46,
  'test/monitors/pollers.test.ts': 45,
  'test/monitors/cooldown.test.ts': 41,
  'test/workflows/scrape-event.test.ts': 39,
  'test/monitors/worker-faults.test.ts': 38,
  'test/monitors/refused-event.test.ts': 38,
  'test/monitors/fairness.test.ts': 37,
  'test/monitors/refused-event-direct.test.ts': 37,
  'test/billing/stripe/meter-sync-worker.test.ts': 35,
  'test/monitors/retirement.test.ts': 33,
  'test/faults/paused-worker.test.ts': 31,
};

export default class LongFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const base = await super.sort(files);
    const measured = (spec: TestSpecification) => MEASURED_S[relative(this.ctx.config.root, spec.moduleId).split('\\').join('/')] ?? 0;
    // Array.prototype.sort is stable: files with no figure keep vitest's order among themselves.
    return base.map((spec, i) => ({ spec, i, s: measured(spec) })).sort((a, b) => b.s - a.s || a.i - b.i).map((x) => x.spec);
  }
}
