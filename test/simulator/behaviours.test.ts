// How a simulated page answers, whatever the platform: an unknown event or another region is a
// 404, then the event's behaviour (a transient 503 per `failures`, not_found, error, blocked,
// slow, hang, malformed, challenge) decides; every request served is counted. Checked on an HTML
// and a JSON platform, and blocked and challenge on a marketplace too.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startSimulator, type Simulator } from '../../src/simulator/server.ts';
import { hits } from '../support/simulator.ts';

let sim: Simulator;
beforeAll(async () => {
  sim = await startSimulator({ empty: true });
});
afterAll(async () => {
  await sim?.close();
});

const put = async (platform: string, key: string, body: Record<string, unknown>) => {
  const res = await fetch(`${sim.url}/_sim/${platform}/events/${key}`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  expect(res.status).toBe(200);
};
const get = (platform: string, key: string) => fetch(`${sim.url}/_sim/${platform}/events/${key}`).then((r) => r.json());

/** pf_11 serves an HTML page, pf_05 a JSON API. */
const PAGES = {
  html: { platform: 'pf_11', url: (key: string, region = 'us') => `${sim.baseUrls.pf_11}/event/${key}?region=${region}`, region: 'us', type: 'text/html' },
  json: { platform: 'pf_05', url: (key: string, region = 'it') => `${sim.baseUrls.pf_05}/api/eventi/${key}/settori?regione=${region}`, region: 'it', type: 'application/json' },
} as const;

const sections = [{ name: 'Floor', price: 10, stock: 2 }];

describe.each(Object.entries(PAGES))('%s pages', (_kind, p) => {
  let n = 0;
  const key = () => String(1_000_000 + n++ + (p.platform === 'pf_05' ? 0 : 500));

  it('serve the event in its region only', async () => {
    const k = key();
    await put(p.platform, k, { region: p.region, sections });
    const ok = await fetch(p.url(k));
    expect(ok.status).toBe(200);
    expect(ok.headers.get('content-type')).toContain(p.type);
    expect((await fetch(p.url(k, 'xx'))).status).toBe(404);
    expect((await fetch(p.url(String(9_999_999)))).status).toBe(404);
    // Only the request that found the event counts.
    expect((await get(p.platform, k)).hits).toBe(1);
  });

  it('count as `reads` only the whole pages served: not a failure, a refusal or a malformed page', async () => {
    const k = key();
    await put(p.platform, k, { region: p.region, sections, failures: 1 });
    expect((await fetch(p.url(k))).status).toBe(503);
    expect((await fetch(p.url(k))).status).toBe(200);
    await put(p.platform, k, { region: p.region, sections, behaviour: 'malformed' });
    await (await fetch(p.url(k))).arrayBuffer();
    await put(p.platform, k, { region: p.region, sections, behaviour: 'blocked' });
    await (await fetch(p.url(k))).arrayBuffer();
    const state = await get(p.platform, k);
    expect({ hits: state.hits, reads: state.reads }).toEqual({ hits: 4, reads: 1 });
  });

  it('answer 503 for the next `failures` requests, counting down, then normally', async () => {
    const k = key();
    await put(p.platform, k, { region: p.region, sections, failures: 2 });
    expect((await fetch(p.url(k))).status).toBe(503);
    expect((await get(p.platform, k)).failures).toBe(1);
    expect((await fetch(p.url(k))).status).toBe(503);
    expect((await fetch(p.url(k))).status).toBe(200);
    expect(await get(p.platform, k)).toMatchObject({ failures: 0, hits: 3 });
  });

  it.each([
    ['not_found', 404],
    ['error', 503],
  ] as const)('answer %s with a %i in the platform’s own type', async (behaviour, status) => {
    const k = key();
    await put(p.platform, k, { region: p.region, sections, behaviour });
    const res = await fetch(p.url(k));
    expect(res.status).toBe(status);
    expect(res.headers.get('content-type')).toContain(p.type);
  });

  it('answer a blocked event 429 with a Retry-After of retry_after_s (30 by default), in the platform’s own type', async () => {
    const k = key();
    await put(p.platform, k, { region: p.region, sections, behaviour: 'blocked' });
    const res = await fetch(p.url(k));
    expect(res.status).toBe(429);
    expect(res.headers.get('retry-after')).toBe('30');
    expect(res.headers.get('content-type')).toContain(p.type);
    expect(await get(p.platform, k)).toMatchObject({ behaviour: 'blocked', blocked_status: 429, retry_after_s: 30, hits: 1 });
  });

  it('answer blocked_status 403 and the Retry-After asked for, or none when retry_after_s is null', async () => {
    const k = key();
    await put(p.platform, k, { region: p.region, sections, behaviour: 'blocked', blocked_status: 403, retry_after_s: 5 });
    const refused = await fetch(p.url(k));
    expect(refused.status).toBe(403);
    expect(refused.headers.get('retry-after')).toBe('5');
    await put(p.platform, k, { region: p.region, sections, behaviour: 'blocked', retry_after_s: null });
    const bare = await fetch(p.url(k));
    expect(bare.status).toBe(429);
    expect(bare.headers.has('retry-after')).toBe(false);
  });

  it('count down `failures` before blocking, and serve the page once the event is ok again', async () => {
    const k = key();
    await put(p.platform, k, { region: p.region, sections, behaviour: 'blocked', failures: 1 });
    expect((await fetch(p.url(k))).status).toBe(503);
    expect((await fetch(p.url(k))).status).toBe(429);
    await put(p.platform, k, { region: p.region, sections });
    const ok = await fetch(p.url(k));
    expect(ok.status).toBe(200);
    expect(ok.headers.has('retry-after')).toBe(false);
  });

  it('answer a slow event after its delay', async () => {
    const k = key();
    await put(p.platform, k, { region: p.region, sections, behaviour: 'slow', delay_ms: 300 });
    const started = performance.now();
    expect((await fetch(p.url(k))).status).toBe(200);
    expect(performance.now() - started).toBeGreaterThanOrEqual(290);
  });

  it('never answer a hanging event, until the client gives up', async () => {
    const k = key();
    await put(p.platform, k, { region: p.region, sections, behaviour: 'hang' });
    const outcome = await fetch(p.url(k), { signal: AbortSignal.timeout(300) }).then(
      () => 'answered',
      (err: Error) => err.name,
    );
    expect(outcome).toBe('TimeoutError');
  });

  it('answer a challenge event with the platform’s challenge page, status 200, counted as a hit', async () => {
    const k = key();
    await put(p.platform, k, { region: p.region, sections, behaviour: 'challenge' });
    const res = await fetch(p.url(k));
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    if (p.platform === 'pf_11') {
      // Cloudflare-style.
      expect(res.headers.get('cf-mitigated')).toBe('challenge');
      expect(await res.text()).toContain('<title>Just a moment...</title>');
    } else {
      // DataDome-style, in JSON.
      expect(res.headers.get('x-datadome')).toBe('protected');
      expect((await res.json()).url).toMatch(/^https:\/\/geo\.captcha-delivery\.com\/captcha\/\?initialCid=sim&cid=\w+$/);
    }
    expect((await get(p.platform, k)).hits).toBe(1);
  });

  it('serve a broken variant of the page when malformed', async () => {
    const k = key();
    await put(p.platform, k, { region: p.region, sections });
    const good = await (await fetch(p.url(k))).text();
    await put(p.platform, k, { region: p.region, sections, behaviour: 'malformed' });
    const bad = await fetch(p.url(k));
    expect(bad.status).toBe(200);
    expect(await bad.text()).not.toBe(good);
  });
});

const putBlocked = (fields: Record<string, unknown>) =>
  fetch(`${sim.url}/_sim/pf_03/events/show-blocked`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ region: 'us', behaviour: 'blocked', ...fields }),
  });

it('takes a Retry-After of 0 seconds', async () => {
  expect((await putBlocked({ blocked_status: 403, retry_after_s: 0 })).status).toBe(200);
  const page = await fetch(`${sim.baseUrls.pf_03}/e/show-blocked?region=us`);
  expect(page.status).toBe(403);
  expect(page.headers.get('retry-after')).toBe('0');
});

it.each([
  ['a blocked_status other than 429 or 403', { blocked_status: 400 }, /blocked_status/],
  ['a negative retry_after_s', { retry_after_s: -1 }, /retry_after_s/],
  ['a fractional retry_after_s', { retry_after_s: 1.5 }, /retry_after_s/],
  ['a retry_after_s over a day', { retry_after_s: 86_401 }, /retry_after_s/],
])('the control API refuses %s with a 400', async (_label, fields, message) => {
  const res = await putBlocked(fields);
  expect(res.status).toBe(400);
  expect((await res.json()).error).toMatch(message);
});

it('blocks a marketplace event the same way', async () => {
  const res = await fetch(`${sim.url}/_sim/marketplace_b/events/0B005F2A9B1E4D2C`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ behaviour: 'blocked', retry_after_s: 12 }),
  });
  expect(res.status).toBe(200);
  const page = await fetch(`${sim.marketplaceUrls.marketplace_b}/event/0B005F2A9B1E4D2C`);
  expect(page.status).toBe(429);
  expect(page.headers.get('retry-after')).toBe('12');
});

it('answers a marketplace event with the challenge behaviour with the Cloudflare-style page', async () => {
  const res = await fetch(`${sim.url}/_sim/marketplace_a/events/E-104729`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ behaviour: 'challenge' }),
  });
  expect(res.status).toBe(200);
  const page = await fetch(`${sim.marketplaceUrls.marketplace_a}/api/events/E-104729`);
  expect(page.status).toBe(200);
  expect(page.headers.get('cf-mitigated')).toBe('challenge');
  expect(await page.text()).toContain('id="challenge-running"');
});

it('closes with a hanging request still open', async () => {
  const own = await startSimulator({ empty: true });
  await fetch(`${own.url}/_sim/pf_03/events/show-1`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ region: 'us', behaviour: 'hang' }) });
  const hanging = fetch(`${own.baseUrls.pf_03}/e/show-1?region=us`).catch((err: Error) => err);
  // Open: the simulator has the request.
  await vi.waitFor(async () => expect(await hits(own, 'pf_03', 'show-1')).toBe(1), { timeout: 15_000 });
  const started = performance.now();
  await own.close();
  // Not held open by the request (it would never end); room for a loaded machine.
  expect(performance.now() - started).toBeLessThan(5_000);
  expect(await hanging).toBeInstanceOf(Error);
});
