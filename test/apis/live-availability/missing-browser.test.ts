// A first run without Chromium (issue 14), through the real stack split as in production: the
// production worker entry (temporal/worker-main.ts) in a child process whose CHROMIUM_PATH does
// not exist, and a gateway in this process that runs no worker and never looks for a browser. The
// worker prints the fix at start-up; the gateway learns from the worker's report that pf_01 is
// degraded (GET /events/platforms) and answers its scrapes 500 with one short sentence naming the
// browser, at once (not retried) and unbilled, while the HTTP platforms scrape as before.
import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { TemporalScrapeRunner } from '../../../src/apis/live-availability/scrape-runs.ts';
import { PLATFORM_KEYS } from '../../../src/platform/registry.ts';
import { clientFor, usedCredits } from '../../support/gateway-helpers.ts';
import { eventually, newAccount } from '../../support/harness.ts';
import { putEvent, section } from '../../support/scrape-stack.ts';
import { uniqueTaskQueue } from '../../support/temporal.ts';
import { useWorkerStack, type WorkerStack } from '../../support/worker-stack.ts';

const MISSING = `/nonexistent-${randomUUID().slice(0, 8)}/chromium`;
const TIMEOUT_MS = 9_000;

const stack = useWorkerStack<WorkerStack>({
  database: 'tm_no_browser',
  env: { SCRAPE_TASK_QUEUE: uniqueTaskQueue('scrapes'), MONITOR_TASK_QUEUE: uniqueTaskQueue('monitors'), SCRAPE_TIMEOUT_MS: String(TIMEOUT_MS) },
  worker: 'child-process',
  queues: (config) => [config.SCRAPE_TASK_QUEUE],
  childEnv: () => ({ CHROMIUM_PATH: MISSING, SCRAPE_TIMEOUT_MS: String(TIMEOUT_MS) }),
  services: ({ client, config, db }) => ({
    scrapes: new TemporalScrapeRunner(client, { taskQueue: config.SCRAPE_TASK_QUEUE, timeoutMs: TIMEOUT_MS, browserReports: db }),
  }),
  build: async (s) => s,
});

/** The worker's JSON log lines. */
function workerLines(): { level: number; msg: string; [k: string]: unknown }[] {
  return stack
    .workerOutput()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l));
}

/**
 * Until GET /events/ping says a scrape worker polls the queue (its readiness check): a worker
 * spawned late in a full run can take many seconds to get its first poll through the shared
 * test server, and a scrape sent before that only times out.
 */
async function workerPolling(): Promise<void> {
  const probe = await newAccount(stack.db, { plan: 'enterprise' });
  const api = clientFor(stack.gateway.url);
  await eventually(async () => ((await api('GET', '/events/ping', { key: probe.key })).status === 200 ? true : undefined), 90_000, 500);
}

describe('without Chromium on the scrape worker', { timeout: 120_000 }, () => {
  it('the worker prints the fix at start-up: the package to install, or CHROMIUM_PATH', async () => {
    const hint = await eventually(async () => workerLines().find((l) => l.msg.includes('Chromium not found')), 30_000);
    expect(hint.level).toBe(40); // warn
    expect(hint.msg).toContain(MISSING);
    expect(hint.msg).toContain('pf_01');
    expect(hint.msg).toContain('apt-get install -y chromium');
    expect(hint.msg).toContain('CHROMIUM_PATH');
    // The fix once, not buried under playwright's launch error from the warm-up.
    expect(stack.workerOutput()).not.toContain('could not warm the scrapers');
  });

  it('GET /events/platforms marks pf_01 degraded (browser_missing), every other platform null, the spec fields unchanged', async () => {
    const acct = await newAccount(stack.db, { plan: 'enterprise' });
    const api = clientFor(stack.gateway.url);
    const r = await eventually(async () => {
      const reply = await api('GET', '/events/platforms', { key: acct.key });
      return reply.body?.platforms?.pf_01?.degraded === 'browser_missing' ? reply : undefined;
    }, 30_000);
    expect(r.status).toBe(200);
    for (const key of PLATFORM_KEYS) {
      const entry = r.body.platforms[key];
      expect(Object.keys(entry).sort()).toEqual(['degraded', 'description', 'event_id_example', 'regions', 'sections_type']);
      expect(entry.degraded, key).toBe(key === 'pf_01' ? 'browser_missing' : null);
    }
    expect(r.body.platforms.pf_01).toMatchObject({ sections_type: 'SeatMapSections', event_id_example: 'G5vYZ9fT1aB2cD3e' });
  });

  it('POST /events/scrape of pf_01 answers 500 {detail}: one short sentence naming the browser, not retried, not billed', async () => {
    await workerPolling();
    const acct = await newAccount(stack.db, { plan: 'enterprise' });
    const eventId = randomUUID().replace(/-/g, '').slice(0, 16);
    const r = await clientFor(stack.gateway.url)('POST', '/events/scrape', { key: acct.key, body: { platform: 'pf_01', event_id: eventId, region: 'uk' } });
    expect(r.status, `${r.text}\n${stack.workerOutput().slice(-6000)}`).toBe(500);
    expect(r.body).toEqual({ detail: 'pf_01 cannot be scraped right now: the Chromium browser it needs is missing on the server.' });
    expect(await usedCredits(stack.db, acct.accountId)).toBe(0);
    // One attempt (no retry installs a browser), logged for the operator with the path and the fix.
    const attempts = workerLines().filter((l) => l.msg === 'scrape failed' && String(l.workflow_id).includes(eventId));
    expect(attempts).toHaveLength(1);
    expect(attempts[0]).toMatchObject({ kind: 'browser_missing', attempt: 1 });
    expect(attempts[0]!.err).toContain('apt-get install -y chromium');
  });

  it('the platforms scraped over HTTP are not affected', async () => {
    await workerPolling();
    const acct = await newAccount(stack.db, { plan: 'enterprise' });
    const url = `https://pf03.example/e/no-browser-${randomUUID().slice(0, 8)}`;
    await putEvent(stack.sim, 'pf_03', url, { region: 'fr', currency: 'EUR', sections: [section('Fosse', 59.9, 10)] });
    const r = await clientFor(stack.gateway.url)('POST', '/events/scrape', { key: acct.key, body: { platform: 'pf_03', event_id: url, region: 'fr' } });
    expect(r.status, `${r.text}\n${stack.workerOutput().slice(-6000)}`).toBe(200);
    expect(r.body).toMatchObject({ success: true, total_stock: 10 });
  });
});
