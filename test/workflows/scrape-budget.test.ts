// Spec 4.2's budget at its real size: a scrape "can take up to 60 seconds", so each attempt may
// use all the time left in the request (workflows/scrape-timing.ts). A platform answering in
// 25 s or 45 s is answered; one that never answers still times out at the limit. (With the old
// split, a third of the limit per attempt, both slow pages timed out on every attempt.)
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { parseEventRef, type EventRef } from '../../src/platform/event-ref.ts';
import { hits, putEvent, section, useScrapeStack } from '../support/scrape-stack.ts';

const LIMIT_MS = 60_000;
const stack = useScrapeStack({ timeoutMs: LIMIT_MS });

async function slowEvent(fields: Record<string, unknown>): Promise<{ url: string; ref: EventRef }> {
  const url = `https://pf03.example/e/budget-${randomUUID().slice(0, 8)}`;
  await putEvent(stack.sim, 'pf_03', url, { region: 'fr', sections: [section('Stalls', 80, 3)], ...fields });
  const parsed = parseEventRef('pf_03', url, 'fr');
  if (!parsed.ok) throw new Error(parsed.message);
  return { url, ref: parsed.ref };
}

describe('a scrape at the real 60 s limit', { timeout: 120_000 }, () => {
  it('answers a platform that takes 25 s or 45 s, and times out one that hangs by the limit', async () => {
    const [at25, at45, hung] = await Promise.all([
      slowEvent({ behaviour: 'slow', delay_ms: 25_000 }),
      slowEvent({ behaviour: 'slow', delay_ms: 45_000 }),
      slowEvent({ behaviour: 'hang' }),
    ]);
    const started = Date.now();
    const timed = <T>(p: Promise<T>) => p.then((v) => ({ v, ms: Date.now() - started }), (e: unknown) => ({ e, ms: Date.now() - started }));
    const [a, b, c] = await Promise.all([timed(stack.runner.run(at25.ref)), timed(stack.runner.run(at45.ref)), timed(stack.runner.run(hung.ref))]);
    expect(a).toMatchObject({ v: { success: true, total_stock: 3 } });
    expect(a.ms).toBeGreaterThanOrEqual(25_000);
    expect(b).toMatchObject({ v: { success: true, total_stock: 3 } });
    expect(b.ms).toBeGreaterThanOrEqual(45_000);
    // One attempt each: nothing was cut short and asked again.
    expect(await hits(stack.sim, 'pf_03', at25.url)).toBe(1);
    expect(await hits(stack.sim, 'pf_03', at45.url)).toBe(1);
    expect(c).toMatchObject({ e: { kind: 'timeout' } });
    expect(c.ms).toBeGreaterThanOrEqual(LIMIT_MS - 200);
    // Under the gateway's own wait (limit + 3 s): the run itself answered, at the limit.
    expect(c.ms).toBeLessThan(LIMIT_MS + 2_900);
  });
});
