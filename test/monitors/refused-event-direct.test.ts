// Issue 36 without proxies: the platform's one exit is this machine, and one pf_06 event it refuses,
// watched and scraped on demand 60 times, must not pause the pacer the other targets share
// (before issue 36, 6 of 20 targets fell to 0.10 polls/s). test/support/refused-event.ts runs it.
import { describe, it } from 'vitest';
import { useMonitorStack } from '../support/monitor-stack.ts';
import { refusedEventScenario, SCENARIO_BACKOFF_MS, SCENARIO_INTERVAL_MS } from '../support/refused-event.ts';

const stack = useMonitorStack({
  intervalMs: SCENARIO_INTERVAL_MS,
  env: { SCRAPE_TARGET_BACKOFF_MS: String(SCENARIO_BACKOFF_MS) },
});

describe('one event the platform refuses, without proxies', { timeout: 240_000 }, () => {
  it('costs the other targets none of their polls, and is asked once per back-off step', async () => {
    const result = await refusedEventScenario(stack, ['127.0.0.1']);
    process.stderr.write(`refused event, direct: ${JSON.stringify({ before: result.before.toFixed(1), during: result.during.toFixed(1), asked: result.refusedAsked })}\n`);
  });
});
