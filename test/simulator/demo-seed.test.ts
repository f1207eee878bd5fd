// The demo a new user sees: the seeded simulator's event for each HTTP platform, named by the
// registry's example event id, scrapes with its five demo sections.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { parseEventRef } from '../../src/platform/event-ref.ts';
import { PLATFORMS } from '../../src/platform/registry.ts';
import { createHttpFetcher, type HttpFetcher } from '../../src/scrapers/http-fetcher.ts';
import { ADAPTER_FACTORIES } from '../../src/scrapers/platforms/index.ts';
import { totalStock } from '../../src/scrapers/sections.ts';
import { startSimulator, type Simulator } from '../../src/simulator/server.ts';
import { HTTP_PLATFORMS, warmUp, withFetchers } from '../scrapers/platform-harness.ts';

let sim: Simulator;
let http: HttpFetcher;
beforeAll(async () => {
  sim = await startSimulator();
  http = createHttpFetcher({ concurrency: 8, timeoutMs: 5_000 });
  await warmUp(http, `${sim.url}/_sim/health`);
});
afterAll(async () => {
  http?.close();
  await sim?.close();
});

it.each(HTTP_PLATFORMS)('%s serves its demo event', async (platform) => {
  const info = PLATFORMS[platform];
  const region = platform === 'pf_08' ? 'au' : ((info.regions as readonly string[] | null)?.[0] ?? 'us');
  const parsed = parseEventRef(platform, info.event_id_example, region);
  if (!parsed.ok) throw new Error(parsed.message);
  const adapter = withFetchers(ADAPTER_FACTORIES[platform]({ baseUrl: sim.baseUrls[platform]! }), { http, browser: { withPage: () => Promise.reject(new Error('no browser')) } });
  const data = await adapter.scrape(parsed.ref);
  const seeded = sim.store.get(platform, parsed.ref.key)!;
  expect(Object.keys(data.sections).sort()).toEqual(seeded.sections.map((s) => s.name).sort());
  expect(totalStock(data.sections)).toBe(seeded.sections.reduce((sum, s) => sum + s.stock, 0));
  expect(data.event_info.name).toBe(`Demo event on ${platform}`);
});
