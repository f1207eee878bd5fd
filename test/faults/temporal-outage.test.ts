// Temporal down, with the production entry point (src/main.ts, the gateway and the worker in one
// process with TEMPORAL_ADDRESS, as docker-compose runs them apart) against a Temporal dev server
// of this file's own on persisted state, so it can be SIGKILLed and started again on the same
// state without touching the run's shared server:
// - down at start: the gateway starts and serves every route that does not need Temporal
//   (/usage, the watchlist), the scrape route answers 503 promptly, and once the server comes up
//   the worker starts and an item created meanwhile is monitored;
// - killed during a run: the poll loops run on (a watched item still notifies), an item deleted
//   during the outage stops being polled then, an item created during it is a poller member within
//   15 s of the server's return at the latest and notifies;
// - each outage is logged once per component, with its cause, not once per retry.
// The ground truth is the test's own: the stock it set on the simulator and when.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, type Db } from '../../db/connection.ts';
import { createScratchDatabase } from '../../db/scratch.ts';
import { createLogger } from '../../src/logger.ts';
import { reservePort } from '../../src/runtime/ports.ts';
import { startSimulator, type Simulator } from '../../src/simulator/server.ts';
import { resolveTemporalCli } from '../../temporal/binary.ts';
import { startDevServer, type DevServer } from '../../temporal/dev-server.ts';
import { call, eventually, newAccount, PROJECT_ROOT, type TestAccount } from '../support/harness.ts';
import { putEvent, section } from '../support/scrape-stack.ts';

const stalls = (stock: number) => ({ region: 'fr', sections: [section('Stalls', 80, stock)] });
const quiet = createLogger('error');

/** The service's log lines (pino JSON on stdout) whose msg starts with `prefix`. */
function logLines(out: string, prefix: string): Record<string, unknown>[] {
  return out
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((l) => typeof l.msg === 'string' && l.msg.startsWith(prefix));
}

/** The `Keep-Alive: timeout=N` the server announces, in seconds. */
function http1KeepAlive(headers: Headers): number {
  return Number(/timeout=(\d+)/.exec(headers.get('keep-alive') ?? '')?.[1] ?? 0);
}

describe('Temporal down', { timeout: 180_000 }, () => {
  let scratch: Awaited<ReturnType<typeof createScratchDatabase>>;
  let db: Db;
  let sim: Simulator;
  let temporalDir: string;
  let temporalPort: number;
  let server: DevServer | null = null;
  let service: ChildProcess;
  let out = '';
  let base: string;
  let acct: TestAccount;
  let binary: string | null;

  const startTemporal = async () => {
    server = await startDevServer({ binary, dataDir: temporalDir, port: temporalPort, uiPort: null, namespace: 'default', log: quiet });
    return Date.now();
  };
  const killTemporal = () => {
    process.kill(server!.pid!, 'SIGKILL');
    server = null;
  };

  /** Notifications of the account's item, as [before, after] stocks, from the log. */
  const notified = async (itemId: number) => {
    const rows: { payload: { before: { stock: number }; after: { stock: number } } }[] = await db('notifications')
      .where({ account_id: acct.accountId, kind: 'notification', item_id: itemId })
      .orderBy('id')
      .select('payload');
    return rows.map((r) => [r.payload.before.stock, r.payload.after.stock]);
  };
  /** The item's baseline snapshot once it is a poller member and polled once; undefined before. */
  const member = async (itemId: number): Promise<number | undefined> => (await db('monitor_members').where({ item_id: itemId }).first('baseline_snapshot_id'))?.baseline_snapshot_id ?? undefined;
  const watch = async (event: string) => {
    const res = await call(base, 'POST', '/watchlist', { key: acct.key, body: { website: 'pf_03', event, region: 'fr' } });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body.id as number;
  };

  beforeAll(async () => {
    binary = await resolveTemporalCli();
    scratch = await createScratchDatabase('tm_temporal_outage');
    db = createDb({ connectionString: scratch.url, poolMax: 4 });
    acct = await newAccount(db);
    sim = await startSimulator({ port: 0, host: '127.0.0.1' });
    temporalDir = await fs.mkdtemp(path.join(os.tmpdir(), 'tm-temporal-outage-'));
    temporalPort = await reservePort();
    const port = await reservePort();
    base = `http://127.0.0.1:${port}`;
    const env: NodeJS.ProcessEnv = { ...process.env };
    for (const k of Object.keys(env)) if (k.startsWith('TEMPORAL_') && k !== 'TEMPORAL_CLI_PATH') delete env[k];
    Object.assign(env, {
      DATABASE_URL: scratch.url,
      DATA_DIR: temporalDir,
      HOST: '127.0.0.1',
      PORT: String(port),
      METRICS_PORT: String(await reservePort()),
      TEMPORAL_ADDRESS: `127.0.0.1:${temporalPort}`,
      RUN_WORKER: 'true',
      RUN_STREAM: 'false',
      RUN_SIMULATOR: 'false',
      DEMO_ACCOUNT: 'false',
      PF_03_BASE_URL: sim.baseUrls.pf_03,
      MONITOR_INTERVAL_MS: '500',
      MONITOR_JITTER_RATIO: '0.1',
      BROWSER_PAGES: '1',
      LOG_LEVEL: 'info',
    });
    // The server is NOT running: the gateway must start without it.
    service = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], { cwd: PROJECT_ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    service.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
    service.stderr!.setEncoding('utf8').on('data', (d: string) => (out += d));
  });

  afterAll(async () => {
    if (process.env.OUTAGE_LOG) await fs.writeFile(process.env.OUTAGE_LOG, out);
    if (service && service.exitCode === null) {
      const exited = new Promise((r) => service.once('exit', r));
      service.kill('SIGKILL');
      await exited;
    }
    await server?.stop();
    await sim?.close();
    await db?.destroy();
    await scratch?.drop();
    if (temporalDir) await fs.rm(temporalDir, { recursive: true, force: true });
  });

  it('at start: the gateway serves what does not need Temporal, refuses scrapes promptly, and the worker starts once it is up', async () => {
    await eventually(async () => (/gateway listening/.test(out) ? true : undefined), 60_000, 200).catch(() => {
      throw new Error(`the gateway did not start while Temporal was down:\n${out}`);
    });
    const usage = await call(base, 'GET', '/usage', { key: acct.key });
    expect(usage.status).toBe(200);
    // Kept-alive longer than nginx keeps its upstream connections (60 s): see src/main.ts.
    expect(http1KeepAlive(usage.headers)).toBeGreaterThan(60);
    const event = `https://pf03.example/e/start-${randomUUID().slice(0, 8)}`;
    await putEvent(sim, 'pf_03', event, stalls(1));
    const item = await watch(event);
    expect((await call(base, 'GET', `/watchlist/${item}`, { key: acct.key })).status).toBe(200);

    const t0 = Date.now();
    const scrape = await call(base, 'POST', '/events/scrape', { key: acct.key, body: { platform: 'pf_03', event_id: event, region: 'fr' } });
    expect([502, 503]).toContain(scrape.status);
    expect(JSON.stringify(scrape.body)).toContain('service_unavailable');
    expect(Date.now() - t0).toBeLessThan(12_000);

    const up = await startTemporal();
    // The worker connects, the relays apply the item created meanwhile, its first poll sets a baseline.
    await eventually(() => member(item), 60_000);
    const changedAt = Date.now();
    await putEvent(sim, 'pf_03', event, stalls(4));
    await eventually(async () => ((await notified(item)).length ? true : undefined), 30_000);
    expect(await notified(item)).toEqual([[1, 4]]);
    const scrapeAfter = await eventually(async () => {
      const r = await call(base, 'POST', '/events/scrape', { key: acct.key, body: { platform: 'pf_03', event_id: event, region: 'fr' } });
      return r.status === 200 ? r : undefined;
    }, 30_000, 500);
    expect(scrapeAfter.status).toBe(200);
    process.stderr.write(`Temporal up to the item's notification: ${changedAt - up} ms to its baseline, ${Date.now() - changedAt} ms more to the notification and a scrape\n`);

    // Each component waited once, said why, and said when it was over.
    const waits = logLines(out, 'Temporal unreachable');
    expect(waits.length).toBeGreaterThanOrEqual(1);
    expect(waits.length).toBeLessThanOrEqual(2); // the gateway's client, the worker's
    for (const w of waits) expect(w.cause).toBeTruthy();
    expect(logLines(out, 'Temporal reachable')).toHaveLength(waits.length);
  });

  it('killed during a run and restarted on its state: polls run on, and an item created meanwhile is monitored within 15 s of its return', async () => {
    const event = `https://pf03.example/e/run-${randomUUID().slice(0, 8)}`;
    await putEvent(sim, 'pf_03', event, stalls(1));
    const watched = await watch(event);
    const doomedEvent = `https://pf03.example/e/doomed-${randomUUID().slice(0, 8)}`;
    await putEvent(sim, 'pf_03', doomedEvent, stalls(1));
    const doomed = await watch(doomedEvent);
    await eventually(() => member(watched), 30_000);
    await eventually(() => member(doomed), 30_000);
    const retriesBefore = logLines(out, 'could not apply watchlist changes').length;

    killTemporal();
    // What needs no Temporal still answers.
    expect((await call(base, 'GET', '/usage', { key: acct.key })).status).toBe(200);
    const lateEvent = `https://pf03.example/e/late-${randomUUID().slice(0, 8)}`;
    await putEvent(sim, 'pf_03', lateEvent, stalls(2));
    const late = await watch(lateEvent);
    // A delete needs no Temporal: its member row goes during the outage, so it is notified no more.
    expect((await call(base, 'DELETE', `/watchlist/${doomed}`, { key: acct.key })).status).toBe(204);
    await eventually(async () => ((await db('monitor_members').where({ item_id: doomed }).first('item_id')) ? undefined : true), 15_000, 200);
    await putEvent(sim, 'pf_03', doomedEvent, stalls(9));
    // The shard pollers' activities run in the worker: a watched item is notified during the outage.
    await putEvent(sim, 'pf_03', event, stalls(5));
    await eventually(async () => ((await notified(watched)).length ? true : undefined), 20_000);
    // Long enough for the relays to fail and retry a few times. The late item may be polled
    // already (its shard's poller runs in the worker), or wait for a poller to be started.
    await new Promise((r) => setTimeout(r, 8_000));

    const back = await startTemporal();
    await eventually(() => member(late), 15_000, 200).catch(() => {
      throw new Error(`the item created during the outage was not monitored within 15 s of Temporal's return:\n${out.split('\n').slice(-40).join('\n')}`);
    });
    const memberAfter = Date.now() - back;
    await putEvent(sim, 'pf_03', lateEvent, stalls(7));
    await eventually(async () => ((await notified(late)).length ? true : undefined), 20_000);
    process.stderr.write(`item created during the outage: a member ${memberAfter} ms after Temporal's return\n`);
    expect(await notified(late)).toEqual([[2, 7]]);
    expect(await notified(watched)).toEqual([[1, 5]]);
    expect(await notified(doomed)).toEqual([]);

    // Once per relay per outage (two relays), not once per retry; and each said it was over.
    const failed = logLines(out, 'could not apply watchlist changes').slice(retriesBefore);
    expect(failed.length).toBeGreaterThanOrEqual(1);
    expect(failed.length).toBeLessThanOrEqual(2);
    for (const f of failed) expect(f.cause).toBeTruthy();
    // The monitor relay's next retry (every 4 s at most) says it is over; the members may be back before it.
    await eventually(async () => (logLines(out, 'apply watchlist changes: works again').length >= failed.length ? true : undefined), 15_000, 200);
    // The SDK's core retries every poller many times a second while the server is away: one warning per kind.
    const coreRetries = logLines(out, 'gRPC call').filter((l) => l.level === 40);
    const kinds = new Set(coreRetries.map((l) => String(l.msg).replace(/\d+/g, '#')));
    expect(coreRetries.length).toBe(kinds.size);
  });
});
