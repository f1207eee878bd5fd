// The workers as docker-compose runs them (issue 25): the scrape worker is the production entry
// (`npm run worker`, WORKER_ROLE=scrape) in a child process with no webhook key, connected as a
// database role that has only db/scraper-grants.ts's rights; the delivery worker
// (WORKER_ROLE=deliver) runs apart, here in this process, with the key and the owning role. Every
// path of the scrape worker works on those rights alone: a watched target's change is notified and
// its webhook delivery enqueued (and then sent, signed, by the delivery worker), an on-demand
// scrape answers, a tracked event's ticks write the catalog and statistics, and an account that
// stops being served leaves the pollers and comes back. Nothing is refused for want of a right.
import { randomBytes, randomUUID } from 'node:crypto';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { applyScraperGrants } from '../../db/scraper-grants.ts';
import { TemporalScrapeRunner } from '../../src/apis/live-availability/scrape-runs.ts';
import { TemporalEventTracker } from '../../src/market-data/tracking-service.ts';
import type { Simulator } from '../../src/simulator/server.ts';
import { startLocalWorkers } from '../../temporal/runtime.ts';
import { createItem } from '../apis/watchlist/helpers.ts';
import { createWebhook } from '../apis/webhooks/helpers.ts';
import { randomAId } from '../support/market-data-fixtures.ts';
import { call, eventually, newAccount } from '../support/harness.ts';
import { putEvent, section } from '../support/scrape-stack.ts';
import { temporalAddress, uniqueTaskQueue } from '../support/temporal.ts';
import { startReceiver } from '../support/webhook-receiver.ts';
import { useWorkerStack, type WorkerStack } from '../support/worker-stack.ts';

const ROLE = `tm_scraper_${randomBytes(4).toString('hex')}`;
const PASSWORD = randomBytes(12).toString('hex');
const marketplaceUrls = (sim: Simulator) => ({ marketplace_a: sim.marketplaceUrls.marketplace_a, marketplace_b: sim.marketplaceUrls.marketplace_b });
/** Settings both workers and the gateway share. */
const SHARED = {
  MONITOR_INTERVAL_MS: '300',
  MONITOR_JITTER_RATIO: '0.1',
  MONITOR_RETIRE_AFTER_MS: '1000',
  TRACK_INTERVAL_MS: '300',
  TRACKING_END_AFTER_EVENT_MS: '0',
  SERVICE_SWEEP_MS: '300',
  WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
};

const stack = useWorkerStack<WorkerStack>({
  database: 'tm_split',
  env: { ...SHARED, SCRAPE_TASK_QUEUE: uniqueTaskQueue('scrapes'), MONITOR_TASK_QUEUE: uniqueTaskQueue('monitors'), BROWSER_PAGES: '1' },
  worker: 'child-process',
  queues: () => [],
  childEnv: async ({ db, databaseUrl, sim }) => {
    // As `npm run db:roles` and the migrate job (SCRAPER_DB_ROLE) make it.
    await db.raw(`CREATE ROLE ${ROLE} LOGIN PASSWORD '${PASSWORD}'`);
    await applyScraperGrants(db, ROLE);
    const url = new URL(databaseUrl);
    url.username = ROLE;
    url.password = PASSWORD;
    return {
      ...SHARED,
      WORKER_ROLE: 'scrape',
      DATABASE_URL: url.toString(),
      // The stack hands every child worker the gateway's key: this one must not have it.
      WEBHOOK_SECRET_KEY: '',
      MARKETPLACE_A_BASE_URL: marketplaceUrls(sim).marketplace_a,
      MARKETPLACE_B_BASE_URL: marketplaceUrls(sim).marketplace_b,
    };
  },
  gatewayEnv: { WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' },
  services: ({ client, config, db, sim }) => ({
    scrapes: new TemporalScrapeRunner(client, { taskQueue: config.SCRAPE_TASK_QUEUE, timeoutMs: config.SCRAPE_TIMEOUT_MS, browserReports: db }),
    tracking: new TemporalEventTracker(db, client, marketplaceUrls(sim), {
      taskQueue: config.MONITOR_TASK_QUEUE,
      scrapeQueue: config.SCRAPE_TASK_QUEUE,
      intervalMs: config.TRACK_INTERVAL_MS,
    }),
  }),
  build: async (s, { log, onClose }) => {
    // Workflow ids name items and webhooks, and every file shares the run's namespace.
    for (const seq of ['watchlist_items_id_seq', 'webhooks_id_seq']) await s.db.raw(`ALTER SEQUENCE ${seq} RESTART WITH ${1 + Math.floor(Math.random() * 2 ** 40)}`);
    const delivery = await startLocalWorkers(s.config, log, temporalAddress(), { connectionString: s.databaseUrl, registry: new Registry(), role: 'deliver', shutdownGraceMs: 500 });
    onClose(() => delivery.stop());
    onClose(async () => {
      await s.db.raw('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = ?', [ROLE]);
      await s.db.raw(`DROP OWNED BY ${ROLE}`);
      await s.db.raw(`DROP ROLE ${ROLE}`);
    });
    return s;
  },
});

const stalls = (stock: number) => ({ region: 'fr', sections: [section('Stalls', 80, stock)] });
const baselined = (itemId: number) =>
  eventually(async () => {
    const row = await stack.db('monitor_members').where({ item_id: itemId }).first('baseline_snapshot_id');
    return row?.baseline_snapshot_id != null ? true : undefined;
  });

describe('the scrape worker on its own database role, the delivery worker apart', { timeout: 150_000 }, () => {
  it('connects as that role, and it can read no API key', async () => {
    const sessions = await eventually(async () => {
      const rows = await stack.db('pg_stat_activity').where({ usename: ROLE }).select('pid');
      return rows.length ? rows : undefined;
    });
    expect(sessions.length).toBeGreaterThan(0);
    const { rows } = await stack.db.raw("SELECT has_table_privilege(?, 'api_keys', 'SELECT') AS keys, has_column_privilege(?, 'webhooks', 'secret_sealed', 'SELECT') AS secrets", [ROLE, ROLE]);
    expect(rows[0]).toEqual({ keys: false, secrets: false });
  });

  it('a change on a watched target is notified, its delivery enqueued by the scrape worker and sent, signed, by the delivery worker', async () => {
    const acct = await newAccount(stack.db);
    const receiver = await startReceiver();
    try {
      const hook = await createWebhook(stack.gateway.url, acct.key, { url: receiver.url });
      receiver.secrets = [hook.secret as string];
      const event = `https://pf03.example/e/split-${randomUUID().slice(0, 8)}`;
      await putEvent(stack.sim, 'pf_03', event, stalls(1));
      const item = await createItem(stack.gateway.url, acct.key, { website: 'pf_03', event, region: 'fr', webhook_setting_id: hook.id });
      await baselined(item.id);
      await putEvent(stack.sim, 'pf_03', event, stalls(4));
      const notificationId = await eventually(async () => {
        const row: { id: number } | undefined = await stack.db('notifications').where({ account_id: acct.accountId, item_id: item.id, kind: 'notification' }).first('id');
        return row?.id;
      });
      const delivered = await eventually(async () => ((await stack.db('webhook_deliveries').where({ notification_id: notificationId, state: 'delivered' }).first('id')) ? true : undefined));
      expect(delivered).toBe(true);
      expect(receiver.received.length).toBeGreaterThan(0);
      expect(receiver.received.every((r) => r.verified[0])).toBe(true);
      // Its checks are recorded on the role's rights too (a refused write would only be logged):
      // the item shows them (issue 38).
      const health = await eventually(async () => {
        const r = await call(stack.gateway.url, 'GET', `/watchlist/${item.id}`, { key: acct.key });
        return r.body.check_status === 'ok' && r.body.last_checked_at !== null ? r.body : undefined;
      });
      expect(Date.parse(health.last_checked_at as string)).toBeGreaterThan(Date.parse(item.created_at));
    } finally {
      await receiver.close();
    }
  });

  it('an on-demand scrape runs on it', async () => {
    const acct = await newAccount(stack.db);
    const event = `https://pf03.example/e/split-scrape-${randomUUID().slice(0, 8)}`;
    await putEvent(stack.sim, 'pf_03', event, stalls(7));
    const r = await eventually(async () => {
      const reply = await call(stack.gateway.url, 'POST', '/events/scrape', { key: acct.key, body: { platform: 'pf_03', event_id: event, region: 'fr' } });
      return reply.status === 200 ? reply : undefined;
    }, 90_000, 1_000);
    expect(r.status).toBe(200);
  });

  it('a tracked event’s ticks write the catalog, the search row and the statistics', async () => {
    const acct = await newAccount(stack.db);
    const id = randomAId();
    await putEvent(stack.sim, 'marketplace_a', id, {
      name: 'Split Concert',
      currency: 'GBP',
      category: 'Split Concerts',
      venue: { name: 'Split Hall', city: 'Leeds', country: 'United Kingdom', country_code: 'GB' },
      artist: { name: 'The Splitters', slug: `the-splitters-${id.slice(2)}` },
      listings: [{ section: 'Floor', quantity: 4, price: 50 }],
      sales: [{ id: 'S-1', sold_at: new Date(Date.now() - 3_600_000).toISOString(), section: 'Floor', quantity: 2, price: 40 }],
    });
    const added = await call(stack.gateway.url, 'POST', '/svc/data/events/add', { key: acct.key, body: { marketplace: 'marketplace_a', event_id: id } });
    expect(added.status, added.text).toBe(201);
    const row = await eventually(async () => {
      const r = await stack.db('tracked_events').where({ marketplace: 'marketplace_a', external_id: id }).first();
      return r && r.scrape_count > 0 && r.event_id ? r : undefined;
    }, 60_000);
    expect(await stack.db('ma_stats_snapshots').where({ event_id: row.event_id }).first('id')).toBeDefined();
    expect(await stack.db('event_search').where({ event_id: row.event_id }).first('event_name')).toEqual({ event_name: 'Split Concert' });
  });

  it('a tracking whose event has passed ends, and its accounts’ links with it', async () => {
    const acct = await newAccount(stack.db);
    const id = randomAId();
    await putEvent(stack.sim, 'marketplace_a', id, { starts_at: new Date(Date.now() - 60_000).toISOString(), listings: [{ section: 'S', quantity: 2, price: 10 }] });
    const added = await call(stack.gateway.url, 'POST', '/svc/data/events/add', { key: acct.key, body: { marketplace: 'marketplace_a', event_id: id } });
    expect(added.status, added.text).toBe(201);
    const row = await eventually(async () => {
      const r = await stack.db('tracked_events').where({ marketplace: 'marketplace_a', external_id: id }).first('id', 'status', 'end_reason');
      return r?.status === 'ended' ? r : undefined;
    }, 60_000);
    expect(row.end_reason).toBe('event_passed');
    expect(await stack.db('tracked_event_accounts').where({ tracked_event_id: row.id }).whereNull('ended_at').first()).toBeUndefined();
  });

  it('a target whose event is gone is retired, and its items told', async () => {
    const acct = await newAccount(stack.db);
    const event = `https://pf03.example/e/split-gone-${randomUUID().slice(0, 8)}`;
    const item = await createItem(stack.gateway.url, acct.key, { website: 'pf_03', event, region: 'fr' });
    const told = await eventually(async () => stack.db('notifications').where({ account_id: acct.accountId, item_id: item.id, kind: 'target_retired' }).first('id'), 60_000);
    expect(told).toBeDefined();
  });

  it('an account that stops being served leaves the pollers, and comes back when served again', async () => {
    const acct = await newAccount(stack.db);
    const event = `https://pf03.example/e/split-lapse-${randomUUID().slice(0, 8)}`;
    await putEvent(stack.sim, 'pf_03', event, stalls(2));
    const item = await createItem(stack.gateway.url, acct.key, { website: 'pf_03', event, region: 'fr' });
    await baselined(item.id);
    const setStatus = (status: string) => stack.db('subscriptions').where({ account_id: acct.accountId }).update({ status, updated_at: new Date() });
    await setStatus('canceled');
    await eventually(async () => ((await stack.db('monitor_members').where({ item_id: item.id }).first('item_id')) ? undefined : true));
    await setStatus('active');
    await baselined(item.id);
  });

  it('the scrape worker was refused nothing', () => {
    expect(stack.workerOutput()).not.toMatch(/permission denied|42501/i);
    expect(stack.workerOutput()).toContain('"role":"scrape"');
  });
});
