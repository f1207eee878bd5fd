// A tracked event whose marketplace is reached through a failing proxy (issue 36), all real: the
// worker, Temporal, PostgreSQL, the gateway, and loopback proxies (test/support/failing-proxies.ts)
// that refuse our credentials (marketplace A) or that nobody listens on (marketplace B). The
// tracking goes `failing`, and the `last_error` that POST /svc/data/events/add answers names the
// marketplace and what happened, never the proxy: no host, port, label, user name or password.
import { afterAll, describe, expect, it } from 'vitest';
import { randomAId, randomBId } from '../support/market-data-fixtures.ts';
import { marksOf, startFailingProxies } from '../support/failing-proxies.ts';
import { eventually, useTrackingStack } from './tracking-stack.ts';

// Listening before the stack is defined: its worker reads SCRAPE_PROXY_URLS when it starts.
const proxies = await startFailingProxies();
afterAll(async () => {
  await proxies.close();
});

const stack = useTrackingStack({
  intervalMs: 300,
  env: { SCRAPE_PROXY_URLS: `marketplace_a=${proxies.refusing.url};marketplace_b=${proxies.dead.url}` },
});

describe('last_error of a tracking whose proxy fails', { timeout: 120_000 }, () => {
  it.each([
    { marketplace: 'marketplace_a' as const, id: randomAId, proxy: () => proxies.refusing, what: 'a proxy refusing our credentials (407)' },
    { marketplace: 'marketplace_b' as const, id: randomBId, proxy: () => proxies.dead, what: 'a proxy nobody listens on' },
  ])('$what: $marketplace is failing, and its last_error names no proxy', async ({ marketplace, id, proxy }) => {
    const eventId = id();
    expect((await stack.add({ marketplace, event_id: eventId })).status).toBe(201);
    await eventually(async () => ((await stack.record(marketplace, eventId))?.status === 'failing' ? true : undefined));
    // Adding it again answers the record, as a customer reads it.
    const again = await stack.add({ marketplace, event_id: eventId });
    expect(again.status, again.text).toBe(200);
    expect(again.body.status).toBe('failing');
    const lastError = again.body.last_error as string;
    expect(lastError).toMatch(new RegExp(`^(upstream|blocked): ${marketplace} `));
    for (const mark of marksOf(proxy())) expect(lastError, mark).not.toContain(mark);
    expect(lastError).not.toMatch(/prox(y|ies)|through/i);
  });
});
