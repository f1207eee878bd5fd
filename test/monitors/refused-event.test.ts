// Issue 36 through five real loopback proxies (proxy-chain, each sending from its own 127.0.0.x):
// one pf_06 event the platform refuses, watched and scraped on demand 60 times, must cost the
// other watched targets nothing (test/support/refused-event.ts runs the scenario and its checks).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLoopbackProxies, type LoopbackProxies } from '../support/loopback-proxies.ts';
import { useMonitorStack } from '../support/monitor-stack.ts';
import { refusedEventScenario, SCENARIO_BACKOFF_MS, SCENARIO_INTERVAL_MS } from '../support/refused-event.ts';

let proxies: LoopbackProxies;
beforeAll(async () => {
  proxies = await startLoopbackProxies(5);
});
afterAll(async () => {
  await proxies?.close();
});

const stack = useMonitorStack({
  intervalMs: SCENARIO_INTERVAL_MS,
  env: () => ({
    SCRAPE_PROXY_URLS: `pf_06=${proxies.setting}`,
    SCRAPE_RPS_PER_PROXY: 'pf_06=20',
    SCRAPE_TARGET_BACKOFF_MS: String(SCENARIO_BACKOFF_MS),
  }),
});

describe('one event the platform refuses, through five proxies', { timeout: 240_000 }, () => {
  it('costs the other targets none of their polls, cools no proxy, and is asked once per back-off step', async () => {
    const result = await refusedEventScenario(stack, proxies.proxies.map((p) => p.address));
    // Every proxy forwarded requests during the window (the scenario checks each kept its share).
    for (const p of proxies.proxies) expect(p.stats().http + p.stats().connect).toBeGreaterThan(0);
    process.stderr.write(`refused event, 5 proxies: ${JSON.stringify({ before: result.before.toFixed(1), during: result.during.toFixed(1), asked: result.refusedAsked, perAddress: result.perAddress })}\n`);
  });
});
