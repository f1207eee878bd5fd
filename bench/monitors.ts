// `npm run bench:monitors`: the watchlist monitors at scale, on real parts started for the run: a
// scratch database, a fresh Temporal dev server, the platform simulator (its own process), the
// production worker wiring in this process (temporal/runtime.ts startLocalWorkers: both task
// queues and the monitor relay) and a gateway serving the Watchlist API.
//
// 1. Scale: T pf_03 targets on the simulator and N items spread over them and over ~50
//    accounts, created through POST /watchlist (16 concurrent). Reports the creation rate, the
//    time until every monitor is subscribed with a baseline (the pollers' subscriber counts sum
//    to N, every poller holds a snapshot, and a random sample of monitors reports joined with a
//    baseline), then two steady windows: quiet (scrapes/s at the simulator against T/interval
//    and against N/interval, CPU and RSS of this process, the Temporal server, the simulator
//    and PostgreSQL) and churn (a fraction of targets gets one section's stock raised every
//    interval; each change should give one stock_increase notification per item on the target).
// 2. Propagation, under that load (the churn keeps running): POST → the monitor is subscribed
//    with a baseline; PATCH change_type → the monitor's config version reaches the item's newest
//    watchlist_changes id; DELETE → the monitor workflow is COMPLETED. Also POST on a target
//    nobody watched yet (the poller starts and scrapes first).
// 3. End to end: a simulator PUT (stock up on a watched target) → the notification rows, seen
//    through LISTEN 'notifications' and a read of the table: first item and all items of the
//    target. The floor is about interval/2 (the poll wait) plus the processing.
// Then the churn stops and the log is checked: every item has, for every section that changed on
// its target, a notification showing the section's final stock (nothing lost, even where two
// changes fell between two polls), and no change was notified twice. The per-unit CPU costs
// (per poll, per item created, per notification) say where the machine's CPU goes.
//
// Env: BENCH_ITEMS (10000), BENCH_TARGETS (300), BENCH_ACCOUNTS (50), BENCH_INTERVAL_MS (5000),
// BENCH_STEADY_MS (30000 per window), BENCH_SAMPLES (30), BENCH_CHANGE_FRACTION (0.1 of the
// targets per interval), BENCH_CONCURRENCY (16), BENCH_E2E_STAGGER_MS (1000). Time boxes, so
// that an overloaded machine still gets a report (every cut is printed in the results):
// BENCH_CREATE_BUDGET_MS (120000: stop creating items; 0: create all N whatever it takes),
// BENCH_READY_TIMEOUT_MS (60000 after the last POST), BENCH_PHASE_BUDGET_MS (60000: no new
// propagation or end-to-end samples after it). BENCH_PROFILE (1: a CPU profile of this process's main thread
// during the ramp-up and the churn window, summarised by area; 0: off). DATABASE_URL as everywhere (unset: an embedded PostgreSQL).
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { Client } from '@temporalio/client';
import proto from '@temporalio/proto';
import { createAccount, createKey } from '../src/accounts/operations.ts';
import { APIS } from '../src/apis/index.ts';
import { loadConfig, type Config } from '../src/config.ts';
import { createGateway } from '../src/gateway/app.ts';
import { Metrics } from '../src/gateway/metrics.ts';
import type { LogRow } from '../src/notifications/log.ts';
import { parseEventRef, type EventRef } from '../src/platform/event-ref.ts';
import { closeServices, createRequestPool, createServices } from '../src/runtime/services.ts';
import { pollerWorkflowId } from '../activities/monitors.ts';
import { createDb, type Db } from '../db/connection.ts';
import { createPool, type Pool } from '../db/pool.ts';
import { createScratchDatabase } from '../db/scratch.ts';
import { resolveTemporalCli } from '../temporal/binary.ts';
import { connectTemporal } from '../temporal/client.ts';
import { startDevServer } from '../temporal/dev-server.ts';
import { startLocalWorkers } from '../temporal/runtime.ts';
import { monitorStatusQuery, pollerStatusQuery, type MonitorStatus, type PollerStatus } from '../workflows/monitor-messages.ts';
import { monitorWorkflowId } from '../workflows/watchlist-monitor.ts';
import { startProfile, type ProfileSummary } from './monitors/profile.ts';
import { cpuBetween, cpuSeconds, parentPid, readCpu, rssMiB, treeCpuSeconds, treePssMiB, type CpuWindow, type Watched } from './monitors/proc.ts';
import {
  countingLogger,
  envInt,
  fmt1,
  fmtMs,
  followLog,
  inParallel,
  sleep,
  startSimulatorProcess,
  until,
  type SimProcess,
} from './monitors/support.ts';
import { summarise, type Summary } from './support/percentiles.ts';
import { freePort } from './support/processes.ts';

const N = envInt('BENCH_ITEMS', 10_000);
const T_REQUESTED = envInt('BENCH_TARGETS', 300);
const INTERVAL_MS = envInt('BENCH_INTERVAL_MS', 5_000);
const STEADY_MS = envInt('BENCH_STEADY_MS', 30_000);
const K = Math.max(1, envInt('BENCH_SAMPLES', 30));
const CHANGE_FRACTION = envInt('BENCH_CHANGE_FRACTION', 0.1);
const CONCURRENCY = Math.max(1, envInt('BENCH_CONCURRENCY', 16));
/** Time boxes, so an overloaded run still ends with a report (each cut is reported, never silent). */
const CREATE_BUDGET_MS = envInt('BENCH_CREATE_BUDGET_MS', 120_000);
const READY_TIMEOUT_MS = envInt('BENCH_READY_TIMEOUT_MS', 60_000);
const PHASE_BUDGET_MS = envInt('BENCH_PHASE_BUDGET_MS', 60_000);
/** A status query the worker cannot answer in this time counts as not answering. */
const QUERY_TIMEOUT_MS = 5_000;
const E2E_STAGGER_MS = envInt('BENCH_E2E_STAGGER_MS', 1_000);
/** Sample this process's main thread during the ramp-up and the churn window (BENCH_PROFILE=0: off). */
const PROFILE = process.env.BENCH_PROFILE !== '0';
/** The per-account item cap is 1000 (WATCHLIST_MAX_ITEMS): enough accounts to stay under it. */
const ACCOUNTS = Math.max(envInt('BENCH_ACCOUNTS', 50), Math.ceil(N / 900), 1);
const T = Math.max(2, Math.min(T_REQUESTED, N));
/** The contract is 60 s; the aim 2 s. Samples give up at the contract. */
const CONTRACT_MS = 60_000;
const AIM_MS = 2_000;
const REGION = 'us';
const NAMESPACE = 'default';

const { TaskQueueType } = proto.temporal.api.enums.v1;

interface Section {
  name: string;
  price: number;
  stock: number;
  ticket_type: 'standard' | 'resale';
}

interface Target {
  index: number;
  url: string;
  ref: EventRef;
  sections: Section[];
  /** Live items on it from the scale phase. */
  items: number;
  /** Highest snapshot id an end-to-end sample saw notified for it. */
  lastSnapshot: number;
  /** Churn changes made to it (each raises the next standard section's stock). */
  changes: number;
}

interface Account {
  id: number;
  key: string;
}

const progress = (msg: string) => process.stderr.write(`${msg}\n`);

/**
 * A status query with a gRPC deadline: null when the worker does not answer in QUERY_TIMEOUT_MS
 * or on any error. The call itself ends at the deadline (never left retrying in the background
 * after the connection is closed).
 */
function bounded<T>(client: Client, query: () => Promise<T>): Promise<T | null> {
  return client.withDeadline(Date.now() + QUERY_TIMEOUT_MS, query).catch(() => null);
}

function sectionsFor(i: number): Section[] {
  const base = 40 + (i % 7) * 10;
  return [
    { name: 'Floor', price: base * 3, stock: 10, ticket_type: 'standard' },
    { name: 'Lower 101', price: base * 2, stock: 20, ticket_type: 'standard' },
    { name: 'Upper 305', price: base, stock: 30, ticket_type: 'standard' },
    { name: 'Resale A', price: base * 2.5, stock: 4, ticket_type: 'resale' },
  ];
}

async function simPut(sim: SimProcess, url: string, sections: Section[]): Promise<void> {
  const res = await fetch(`${sim.url}/_sim/pf_03/events/${encodeURIComponent(url)}`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ region: REGION, sections }),
  });
  if (res.status !== 200) throw new Error(`simulator PUT ${url}: ${res.status} ${await res.text()}`);
  await res.arrayBuffer();
}

/** Pages the simulator served for the bench's pf_03 events so far. */
async function simHits(sim: SimProcess): Promise<number> {
  const res = await fetch(`${sim.url}/_sim/events`);
  const body = (await res.json()) as { events: { platform: string; hits: number }[] };
  return body.events.filter((e) => e.platform === 'pf_03').reduce((s, e) => s + e.hits, 0);
}

async function api(gateway: string, method: string, route: string, key: string, body?: unknown): Promise<{ status: number; body: Record<string, unknown> | null }> {
  const res = await fetch(gateway + route, {
    method,
    headers: { apikey: key, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : null };
}

let interrupted = false;
const cleanups: (() => Promise<unknown>)[] = [];
let cleaning: Promise<void> | null = null;
function cleanup(): Promise<void> {
  return (cleaning ??= (async () => {
    for (const c of cleanups.splice(0).reverse()) await c().catch((err: unknown) => progress(`cleanup failed: ${String(err)}`));
  })());
}
for (const [signal, code] of [
  ['SIGINT', 130],
  ['SIGTERM', 143],
] as const) {
  process.on(signal, () => {
    if (interrupted) process.exit(code); // a second Ctrl-C: stop waiting for the cleanup
    interrupted = true;
    progress(`\n${signal}: stopping and cleaning up (again to exit at once)...`);
    void cleanup().finally(() => process.exit(code));
  });
}
// A stray error (a late gRPC retry after a close, say) must not cut the cleanup short.
process.on('uncaughtException', (err) => {
  progress(`uncaught: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  process.exitCode = 1;
  void cleanup().finally(() => process.exit(1));
});
function checkInterrupted(): void {
  if (interrupted) throw new Error('interrupted');
}

async function main() {
  const started = performance.now();
  const load = os.loadavg();
  progress(
    `bench:monitors: ${N} items on ${T} pf_03 targets over ${ACCOUNTS} accounts, interval ${INTERVAL_MS} ms, ` +
      `windows ${STEADY_MS} ms, ${K} samples; load average before start ${load.map((l) => l.toFixed(2)).join(' ')} on ${os.cpus().length} CPUs`,
  );
  const { log, counts: logCounts } = countingLogger();

  progress('creating a scratch database...');
  const scratch = await createScratchDatabase('tm_bench_monitors');
  cleanups.push(() => scratch.drop());
  checkInterrupted();

  progress('starting the simulator (own process) and a Temporal dev server...');
  const sim = await startSimulatorProcess();
  cleanups.push(() => sim.stop());
  const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'tm-bench-monitors-'));
  cleanups.push(() => fs.rm(dataDir, { recursive: true, force: true }));
  const binary = await resolveTemporalCli({ onProgress: (m) => progress(`  temporal: ${m}`) });
  const server = await startDevServer({ binary, dataDir, port: await freePort(), uiPort: await freePort(), namespace: NAMESPACE, log });
  cleanups.push(() => server.stop());
  checkInterrupted();

  // The worker's activities find the platforms where platformBaseUrls() looks: PF_NN_BASE_URL.
  for (const [platform, url] of Object.entries(sim.baseUrls)) process.env[`${platform.toUpperCase()}_BASE_URL`] = url;
  const config: Config = loadConfig({
    ...process.env,
    DATABASE_URL: scratch.url,
    LOG_LEVEL: 'warn',
    MONITOR_INTERVAL_MS: String(INTERVAL_MS),
    TEMPORAL_ADDRESS: server.address,
    TEMPORAL_NAMESPACE: NAMESPACE,
  });

  progress('bundling workflows and starting the worker (both queues) and the monitor relay...');
  const worker = await startLocalWorkers(config, log, server.address, { connectionString: scratch.url });
  cleanups.push(() => worker.stop());
  checkInterrupted();

  const gatewayDb = createDb({ connectionString: scratch.url, poolMax: config.DB_POOL_MAX, applicationName: 'gateway', statementTimeoutMs: config.DB_STATEMENT_TIMEOUT_MS });
  const services = createServices(config, gatewayDb, createRequestPool(config, scratch.url), log, new Metrics(false));
  const httpServer = createGateway(services, APIS).listen(0, '127.0.0.1');
  await new Promise((r) => httpServer.once('listening', r));
  cleanups.push(async () => {
    httpServer.closeAllConnections();
    await new Promise((r) => httpServer.close(r));
    await closeServices(services);
    await gatewayDb.destroy();
  });
  const gateway = `http://127.0.0.1:${(httpServer.address() as { port: number }).port}`;

  // The bench's own connections, apart from the service's.
  const temporal = await connectTemporal({ address: server.address, namespace: NAMESPACE });
  cleanups.push(() => temporal.close());
  const client: Client = temporal.client;
  const db: Db = createDb({ connectionString: scratch.url, poolMax: 4, applicationName: 'bench-monitors' });
  cleanups.push(() => db.destroy());
  const pool: Pool = createPool({ connectionString: scratch.url, max: 4, applicationName: 'bench-monitors' });
  cleanups.push(() => pool.end());

  // What is watched for CPU and memory.
  const watched: Watched[] = [
    { name: 'this process (gateway, worker, relay, bench)', cpu: () => cpuSeconds('self'), rss: () => rssMiB('self') },
  ];
  if (server.pid) watched.push({ name: 'Temporal dev server', cpu: () => cpuSeconds(server.pid!), rss: () => rssMiB(server.pid!) });
  watched.push({ name: 'simulator (child process)', cpu: () => cpuSeconds(sim.pid), rss: () => rssMiB(sim.pid) });
  const backendPid = Number((await pool.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid);
  const postmaster = parentPid(backendPid);
  if (postmaster) {
    // Memory as PSS: every backend maps the shared buffers, which RSS would count once per backend.
    watched.push({ name: 'PostgreSQL (whole server, all databases; memory as PSS)', cpu: () => treeCpuSeconds(postmaster), rss: () => treePssMiB(postmaster) });
  } else {
    progress('  (PostgreSQL is not a local process here: its CPU is not reported)');
  }
  const accountedFor = (pid: number) =>
    pid === process.pid || pid === server.pid || pid === sim.pid || (postmaster !== null && (pid === postmaster || parentPid(pid) === postmaster));
  const othersText = (w: CpuWindow) =>
    w
      .others(accountedFor)
      .map((o) => `${o.percent.toFixed(0)} % ${o.name.replace(/\|/g, '/')}`)
      .join('; ') || 'none above 1 %';

  // Figures read repeatedly.
  const relayLag = async () => {
    const head = Number((await db('watchlist_changes').max('id as m').first())?.m ?? 0);
    const cursor = Number((await db('relay_cursors').where({ name: 'watchlist-monitors' }).first('last_id'))?.last_id ?? 0);
    return { head, cursor, lag: head - cursor };
  };
  const backlog = async (queue: string, type: 'workflow' | 'activity'): Promise<number | null> => {
    try {
      const res = await temporal.connection.workflowService.describeTaskQueue({
        namespace: NAMESPACE,
        taskQueue: { name: queue },
        taskQueueType: type === 'workflow' ? TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW : TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY,
        reportStats: true,
      });
      return Number(res.stats?.approximateBacklogCount ?? 0);
    } catch {
      return null;
    }
  };
  const backlogs = async () => {
    const [mw, ma, sa] = await Promise.all([
      backlog(config.MONITOR_TASK_QUEUE, 'workflow'),
      backlog(config.MONITOR_TASK_QUEUE, 'activity'),
      backlog(config.SCRAPE_TASK_QUEUE, 'activity'),
    ]);
    return { text: `backlog: monitors wf ${mw ?? '?'} / act ${ma ?? '?'}, scrapes act ${sa ?? '?'}`, mw, ma, sa };
  };
  const runningMonitors = async (): Promise<number | null> => {
    try {
      return (await client.workflow.count('WorkflowType="watchlistMonitor" AND ExecutionStatus="Running"')).count;
    } catch {
      return null;
    }
  };
  const logHead = async () => Number((await pool.query<{ m: string | null }>('SELECT max(id) AS m FROM notifications')).rows[0]!.m ?? 0);
  const notificationsBetween = async (after: number, upTo: number) => {
    const { rows } = await pool.query<{ n: string; p50: number | null; p95: number | null; max: number | null }>(
      `SELECT count(*) AS n,
              percentile_disc(0.5) WITHIN GROUP (ORDER BY lag) AS p50,
              percentile_disc(0.95) WITHIN GROUP (ORDER BY lag) AS p95,
              max(lag) AS max
         FROM (SELECT 1000 * extract(epoch FROM created_at - (payload->>'detected_at')::timestamptz) AS lag
                 FROM notifications WHERE kind = 'notification' AND id > $1 AND id <= $2) x`,
      [after, upTo],
    );
    const r = rows[0]!;
    return { n: Number(r.n), lag: { p50: Number(r.p50), p95: Number(r.p95), max: Number(r.max) } };
  };
  const status = (itemId: number) => client.workflow.getHandle(monitorWorkflowId(itemId)).query(monitorStatusQuery);
  // This process's event loop serves the gateway, the relay and the activities at once.
  const loopDelay = monitorEventLoopDelay({ resolution: 10 });
  loopDelay.enable();
  const readLoopDelay = () => {
    const r = { p50: loopDelay.percentile(50) / 1e6, p99: loopDelay.percentile(99) / 1e6, max: loopDelay.max / 1e6 };
    loopDelay.reset();
    return r;
  };
  const loopText = (d: { p50: number; p99: number; max: number }) => `${fmtMs(d.p50)} / ${fmtMs(d.p99)} / ${fmtMs(d.max)}`;
  // Where the service's database sessions of this run are waiting.
  const sessions = async () => {
    const { rows } = await pool.query<{ app: string; state: string; wait: string | null; n: string }>(
      `SELECT application_name AS app, state, wait_event_type || ':' || wait_event AS wait, count(*) AS n
         FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND state <> 'idle'
        GROUP BY 1, 2, 3 ORDER BY 4 DESC`,
    );
    return rows.map((r) => `${r.n} ${r.app} ${r.state}${r.wait ? ` (${r.wait})` : ''}`).join(', ') || 'none busy';
  };

  // ---- 1. Scale -------------------------------------------------------------------------------
  progress(`putting ${T} events on the simulator and creating ${ACCOUNTS} accounts...`);
  const targets: Target[] = [];
  for (let i = 0; i < T; i++) {
    const url = `https://pf03.example/e/bench-mon-${i}`;
    const parsed = parseEventRef('pf_03', url, REGION);
    if (!parsed.ok) throw new Error(parsed.message);
    targets.push({ index: i, url, ref: parsed.ref, sections: sectionsFor(i), items: 0, lastSnapshot: 0, changes: 0 });
  }
  await inParallel(targets, CONCURRENCY, (t) => simPut(sim, t.url, t.sections));
  const accounts: Account[] = [];
  for (let a = 0; a < ACCOUNTS; a++) {
    const { account_id } = await createAccount(db, { plan: 'pro', name: `bench-monitors-${a}` });
    const { key } = await createKey(db, { accountId: account_id, rateLimitPerMinute: 1_000_000 });
    accounts.push({ id: account_id, key });
  }
  checkInterrupted();

  progress(`creating ${N} watchlist items through POST /watchlist, ${CONCURRENCY} concurrent...`);
  const itemIds: number[] = new Array<number>(N).fill(0);
  const postLatencies: number[] = [];
  let createFailures = 0;
  let created = 0;
  let createCut = false;
  const createCpu0 = readCpu(watched);
  readLoopDelay();
  const createProfiler = PROFILE ? await startProfile() : null;
  const createHits0 = await simHits(sim);
  const createRss: Record<string, number> = {};
  const createStarted = performance.now();
  const creationProgress = setInterval(() => {
    for (const w of watched) createRss[w.name] = Math.max(createRss[w.name] ?? 0, w.rss());
    void (async () => {
      const [lag, b, running, busy] = await Promise.all([relayLag(), backlogs(), runningMonitors(), sessions()]);
      const s = (performance.now() - createStarted) / 1000;
      const p95 = summarise(postLatencies.slice(-200)).p95;
      progress(
        `  ${s.toFixed(0)} s: ${created}/${N} created (${(created / s).toFixed(0)}/s, recent POST p95 ${fmtMs(p95)}), relay ${lag.lag} behind, ` +
          `monitors running ${running ?? '?'}, ${b.text}; db sessions: ${busy}; event loop delay max ${fmtMs(loopDelay.max / 1e6)}`,
      );
    })().catch(() => {});
  }, 5_000);
  try {
    await inParallel(
      Array.from({ length: N }, (_, i) => i),
      CONCURRENCY,
      async (i) => {
        checkInterrupted();
        if (CREATE_BUDGET_MS > 0 && performance.now() - createStarted > CREATE_BUDGET_MS) {
          createCut = true;
          return;
        }
        const target = targets[i % T]!;
        const account = accounts[i % ACCOUNTS]!;
        const t0 = performance.now();
        const res = await api(gateway, 'POST', '/watchlist', account.key, { website: 'pf_03', event: target.url, region: REGION }).catch(() => null);
        postLatencies.push(performance.now() - t0);
        if (res?.status === 201) {
          itemIds[i] = Number(res.body!.id);
          target.items++;
          created++;
        } else {
          createFailures++;
          if (createFailures <= 3) progress(`  POST /watchlist failed: ${res ? `${res.status} ${JSON.stringify(res.body)}` : 'no answer'}`);
        }
      },
    );
  } finally {
    clearInterval(creationProgress);
  }
  const createSeconds = (performance.now() - createStarted) / 1000;
  progress(
    `  ${created} created in ${createSeconds.toFixed(1)} s (${(created / createSeconds).toFixed(0)}/s), ${createFailures} failures` +
      (createCut ? `; STOPPED at the ${CREATE_BUDGET_MS / 1000} s budget (all ${N} would take ~${((N / created) * createSeconds).toFixed(0)} s at this rate)` : ''),
  );
  checkInterrupted();

  progress('waiting until every monitor is subscribed to its poller with a baseline...');
  const liveIds = itemIds.filter((id) => id > 0);
  let ready = false;
  let readyAt = NaN;
  let lastRound = { subscribers: 0, withSnapshot: 0, unreachable: 0 };
  const pollerRound = async () => {
    const round = { subscribers: 0, withSnapshot: 0, unreachable: 0 };
    await inParallel(targets, 2 * CONCURRENCY, async (t) => {
      const s: PollerStatus | null = await bounded(client, () => client.workflow.getHandle(pollerWorkflowId(t.ref)).query(pollerStatusQuery));
      if (!s) {
        round.unreachable++;
        return;
      }
      round.subscribers += s.subscribers.length;
      if (s.lastSnapshotId !== null) round.withSnapshot++;
    });
    return round;
  };
  const targetsWithItems = targets.filter((t) => t.items > 0).length;
  let lastPrint = 0;
  while (performance.now() - createStarted < READY_TIMEOUT_MS + createSeconds * 1000) {
    checkInterrupted();
    const lag = await relayLag();
    if (lag.lag === 0) {
      lastRound = await pollerRound();
      if (lastRound.subscribers === liveIds.length && lastRound.withSnapshot === targetsWithItems) {
        ready = true;
        break;
      }
    }
    if (performance.now() - lastPrint > 5_000) {
      lastPrint = performance.now();
      for (const w of watched) createRss[w.name] = Math.max(createRss[w.name] ?? 0, w.rss());
      const b = await backlogs();
      progress(
        `  ${((performance.now() - createStarted) / 1000).toFixed(0)} s: relay ${lag.lag} behind, subscribed ${lastRound.subscribers}/${liveIds.length}, ` +
          `pollers with a snapshot ${lastRound.withSnapshot}/${targetsWithItems} (${lastRound.unreachable} not answering), ${b.text}`,
      );
    }
    await sleep(2_000);
  }
  // The pollers say who is subscribed; a random sample of monitors confirms they hold a baseline.
  const sampleSize = Math.min(200, liveIds.length);
  const sample = [...liveIds].sort(() => Math.random() - 0.5).slice(0, sampleSize);
  let sampledNotReady = sample.length;
  if (ready) {
    const deadline = performance.now() + 60_000;
    let pending = sample;
    while (pending.length && performance.now() < deadline) {
      const still: number[] = [];
      await inParallel(pending, CONCURRENCY, async (id) => {
        const s: MonitorStatus | null = await bounded(client, () => status(id));
        if (!(s && s.joined && s.baseline !== null)) still.push(id);
      });
      pending = still;
      if (pending.length) await sleep(500);
    }
    sampledNotReady = pending.length;
    ready = pending.length === 0;
  }
  readyAt = performance.now();
  const createCpu = cpuBetween(createCpu0, readCpu(watched));
  const createLoop = readLoopDelay();
  const createProfile = (await createProfiler?.stop()) ?? null;
  const createPolls = (await simHits(sim)) - createHits0;
  const readyFromFirst = (readyAt - createStarted) / 1000;
  const readyFromLast = readyFromFirst - createSeconds;
  const monitorsRunning = await runningMonitors();
  progress(
    ready
      ? `  all ${liveIds.length} monitors subscribed with a baseline ${readyFromFirst.toFixed(1)} s after the first POST (${readyFromLast.toFixed(1)} s after the last)`
      : `  NOT READY after ${readyFromFirst.toFixed(1)} s: subscribed ${lastRound.subscribers}/${liveIds.length}, pollers with a snapshot ${lastRound.withSnapshot}/${targetsWithItems}, ${sampledNotReady}/${sample.length} sampled monitors without a baseline`,
  );

  // Windows: scrapes at the simulator, CPU, RSS, notifications written.
  interface WindowResult {
    seconds: number;
    scrapes: number;
    cpu: CpuWindow;
    rssMax: Record<string, number>;
    notifications: number;
    lag: { p50: number; p95: number; max: number };
    backlogEnd: string;
    loop: { p50: number; p99: number; max: number };
  }
  const measureWindow = async (label: string, ms: number, during: () => string): Promise<WindowResult> => {
    progress(`${label}: ${ms / 1000} s...`);
    const hits0 = await simHits(sim);
    const head0 = await logHead();
    const cpu0 = readCpu(watched);
    readLoopDelay();
    const rssMax: Record<string, number> = {};
    const end = performance.now() + ms;
    let printed = performance.now();
    let sampled = 0;
    while (performance.now() < end) {
      checkInterrupted();
      await sleep(Math.min(1_000, Math.max(0, end - performance.now())));
      // Memory every few seconds: reading PostgreSQL's smaps is not free.
      if (performance.now() - sampled >= 3_000) {
        sampled = performance.now();
        for (const w of watched) rssMax[w.name] = Math.max(rssMax[w.name] ?? 0, w.rss());
      }
      if (performance.now() - printed >= 5_000 && performance.now() < end - 1_000) {
        printed = performance.now();
        const elapsed = (printed - cpu0.at) / 1000;
        const [hits, b, head, busy] = await Promise.all([simHits(sim), backlogs(), logHead(), sessions()]);
        const c = cpuBetween(cpu0, readCpu(watched, false));
        progress(
          `  ${elapsed.toFixed(0)} s: ${((hits - hits0) / elapsed).toFixed(1)} scrapes/s, ${head - head0} log rows, ` +
            `CPU ${Object.values(c.percent).map((p) => p.toFixed(0)).join('/')} % (machine ${c.machinePercent.toFixed(0)} % of ${c.cores * 100}), ${b.text}${during()}; db sessions: ${busy}; event loop delay max ${fmtMs(loopDelay.max / 1e6)}`,
        );
      }
    }
    const cpu1 = readCpu(watched);
    for (const w of watched) rssMax[w.name] = Math.max(rssMax[w.name] ?? 0, w.rss());
    const loop = readLoopDelay();
    const [hits1, head1, b] = await Promise.all([simHits(sim), logHead(), backlogs()]);
    const notes = await notificationsBetween(head0, head1);
    const cpu = cpuBetween(cpu0, cpu1);
    return { seconds: cpu.seconds, scrapes: hits1 - hits0, cpu, rssMax, notifications: notes.n, lag: notes.lag, backlogEnd: b.text, loop };
  };

  const quietProfiler = PROFILE ? await startProfile() : null;
  const quiet = await measureWindow('steady state, quiet (no inventory changes)', STEADY_MS, () => '');

  const quietProfile = (await quietProfiler?.stop()) ?? null;

  // Targets kept out of the churn: the propagation and end-to-end samples use them.
  const reservedCount = Math.max(1, Math.min(K, Math.floor(targetsWithItems / 4)));
  const withItems = targets.filter((t) => t.items > 0);
  const reserved = withItems.slice(withItems.length - reservedCount);
  const churnable = withItems.slice(0, withItems.length - reservedCount);
  const perTick = churnable.length ? Math.max(1, Math.round(CHANGE_FRACTION * churnable.length)) : 0;
  const churn = { ticks: 0, skipped: 0, changes: 0, expected: 0, failures: 0, next: 0, running: false };
  const churnTick = async () => {
    if (churn.running) {
      churn.skipped++;
      return;
    }
    churn.running = true;
    try {
      const batch = Array.from({ length: perTick }, () => churnable[churn.next++ % churnable.length]!);
      churn.ticks++;
      await inParallel(batch, CONCURRENCY, async (t) => {
        // One more ticket in one standard section: one stock_increase per item with the default config.
        const s = t.sections[t.changes++ % 3]!;
        s.stock++;
        try {
          await simPut(sim, t.url, t.sections);
          churn.changes++;
          churn.expected += t.items;
        } catch {
          s.stock--;
          churn.failures++;
        }
      });
    } finally {
      churn.running = false;
    }
  };
  let churnTimer: NodeJS.Timeout | null = null;
  const stopChurn = async () => {
    if (churnTimer) clearInterval(churnTimer);
    churnTimer = null;
    while (churn.running) await sleep(50);
  };
  cleanups.push(stopChurn);
  if (perTick > 0 && CHANGE_FRACTION > 0) {
    void churnTick();
    churnTimer = setInterval(() => void churnTick(), INTERVAL_MS);
  }
  const churnExpectedPerSecond = (perTick * (churnable.reduce((s, t) => s + t.items, 0) / Math.max(1, churnable.length))) / (INTERVAL_MS / 1000);
  // The first changes are seen a poll later: measure once the flow has started.
  const warmUp = Math.round(1.5 * INTERVAL_MS);
  progress(`churn started; ${warmUp} ms for the first changes to flow before measuring...`);
  await sleep(warmUp);
  const churnProfiler = PROFILE ? await startProfile() : null;
  const churnWindow = await measureWindow(
    `steady state with churn (${perTick} of ${churnable.length} targets changed every ${INTERVAL_MS} ms, ~${churnExpectedPerSecond.toFixed(0)} notifications/s expected)`,
    STEADY_MS,
    () => `, churn ${churn.changes} changes${churn.skipped ? ` (${churn.skipped} ticks skipped)` : ''}`,
  );

  const churnProfile = (await churnProfiler?.stop()) ?? null;

  // ---- 2. Propagation, under load -------------------------------------------------------------
  progress(`propagation: ${K} samples of POST, PATCH and DELETE on watched targets (churn running)...`);
  interface Timed {
    values: number[];
    failures: number;
  }
  const timed = (): Timed => ({ values: [], failures: 0 });
  const postReply = timed();
  const createReady = timed();
  const patchApplied = timed();
  const deleteCompleted = timed();
  const newTargetReady = timed();
  const measureStep = async (into: Timed, step: () => Promise<void>): Promise<boolean> => {
    const t0 = performance.now();
    try {
      await step();
      into.values.push(performance.now() - t0);
      return true;
    } catch (err) {
      into.failures++;
      progress(`  sample failed: ${(err as Error).message}`);
      return false;
    }
  };
  const propagationStarted = performance.now();
  let sampleItemsNotGone = 0;
  let propagationCut = false;
  for (let i = 0; i < K; i++) {
    checkInterrupted();
    if (performance.now() - propagationStarted > PHASE_BUDGET_MS) {
      propagationCut = true;
      progress(`  phase budget (${PHASE_BUDGET_MS / 1000} s) reached after ${i} samples`);
      break;
    }
    const target = reserved[i % reserved.length]!;
    const account = accounts[i % ACCOUNTS]!;
    let id = 0;
    const ok = await measureStep(createReady, async () => {
      const t0 = performance.now();
      const res = await api(gateway, 'POST', '/watchlist', account.key, { website: 'pf_03', event: target.url, region: REGION });
      postReply.values.push(performance.now() - t0);
      if (res.status !== 201) throw new Error(`POST: ${res.status}`);
      id = Number(res.body!.id);
      await until(async () => {
        const s = await status(id);
        return s.joined && s.baseline !== null ? s : undefined;
      }, CONTRACT_MS);
    });
    if (!ok) {
      // The monitor never came up within the contract: PATCH and DELETE timings would only
      // measure the same queue again, a minute each. Remove the item unmeasured.
      if (id) {
        await api(gateway, 'DELETE', `/watchlist/${id}`, account.key).catch(() => null);
        sampleItemsNotGone++;
      }
      continue;
    }
    await measureStep(patchApplied, async () => {
      const res = await api(gateway, 'PATCH', `/watchlist/${id}`, account.key, { change_type: 'price_decrease' });
      if (res.status !== 200) throw new Error(`PATCH: ${res.status}`);
      const newest = Number((await db('watchlist_changes').where({ item_id: id }).max('id as m').first())?.m);
      await until(async () => ((await status(id)).version >= newest ? true : undefined), CONTRACT_MS);
    });
    sampleItemsNotGone++;
    await measureStep(deleteCompleted, async () => {
      const res = await api(gateway, 'DELETE', `/watchlist/${id}`, account.key);
      if (res.status !== 204) throw new Error(`DELETE: ${res.status}`);
      const handle = client.workflow.getHandle(monitorWorkflowId(id));
      await until(async () => ((await handle.describe()).status.name === 'COMPLETED' ? true : undefined), CONTRACT_MS);
      sampleItemsNotGone--;
    });
    if ((i + 1) % 10 === 0) progress(`  ${i + 1}/${K} (create p50 so far ${fmtMs(summarise(createReady.values).p50)})`);
  }
  const newTargetSamples = Math.max(1, Math.ceil(K / 3));
  progress(`propagation: ${newTargetSamples} samples of POST on a target nobody watched yet...`);
  const newTargetStarted = performance.now();
  for (let i = 0; i < newTargetSamples; i++) {
    checkInterrupted();
    if (performance.now() - newTargetStarted > PHASE_BUDGET_MS / 3) {
      propagationCut = true;
      break;
    }
    const url = `https://pf03.example/e/bench-new-${i}`;
    await simPut(sim, url, sectionsFor(i));
    const account = accounts[i % ACCOUNTS]!;
    let id = 0;
    await measureStep(newTargetReady, async () => {
      const res = await api(gateway, 'POST', '/watchlist', account.key, { website: 'pf_03', event: url, region: REGION });
      if (res.status !== 201) throw new Error(`POST: ${res.status}`);
      id = Number(res.body!.id);
      await until(async () => {
        const s = await status(id);
        return s.joined && s.baseline !== null ? s : undefined;
      }, CONTRACT_MS);
    });
    if (id) {
      await api(gateway, 'DELETE', `/watchlist/${id}`, account.key);
      sampleItemsNotGone++;
    }
  }

  // ---- 3. End to end --------------------------------------------------------------------------
  progress(`end to end: ${K} simulator changes on watched targets, one every ${E2E_STAGGER_MS} ms (churn running)...`);
  interface Sample {
    target: Target;
    t0: number;
    expected: number;
    count: number;
    snapshot: number | null;
    first: number | null;
    last: number | null;
    detectedAt: number | null;
    done: () => void;
  }
  const active = new Map<string, Sample>();
  const follower = followLog({
    pool,
    connectionString: scratch.url,
    after: await logHead(),
    log,
    onRows: (rows: LogRow[], seenAt: number) => {
      for (const row of rows) {
        if (row.kind !== 'notification') continue;
        const s = active.get(String(row.payload.event));
        if (!s) continue;
        const snapshot = Number(row.payload.snapshot_id);
        if (snapshot <= s.target.lastSnapshot) continue;
        s.snapshot ??= snapshot;
        if (snapshot !== s.snapshot) continue;
        s.count++;
        s.first ??= seenAt;
        const detected = Date.parse(String(row.payload.detected_at));
        s.detectedAt = Math.min(s.detectedAt ?? detected, detected);
        if (s.count >= s.expected && s.last === null) {
          s.last = seenAt;
          s.done();
        }
      }
    },
  });
  cleanups.push(() => follower.close());
  const e2eFirst: number[] = [];
  const e2eAll: number[] = [];
  const e2ePollWait: number[] = [];
  const e2eProcessing: number[] = [];
  let e2eFailures = 0;
  let e2eExpected = 0;
  const runSample = async (target: Target) => {
    let done = () => {};
    const finished = new Promise<void>((r) => (done = r));
    const s: Sample = { target, t0: 0, expected: target.items, count: 0, snapshot: null, first: null, last: null, detectedAt: null, done };
    const section = target.sections[0]!;
    section.stock++;
    active.set(target.url, s);
    s.t0 = Date.now();
    await simPut(sim, target.url, target.sections);
    e2eExpected += target.items;
    const timer = sleep(CONTRACT_MS);
    await Promise.race([finished, timer]);
    active.delete(target.url);
    if (s.snapshot !== null) target.lastSnapshot = s.snapshot;
    if (s.first !== null) e2eFirst.push(s.first - s.t0);
    if (s.detectedAt !== null) {
      e2ePollWait.push(s.detectedAt - s.t0);
      if (s.first !== null) e2eProcessing.push(s.first - s.detectedAt);
    }
    if (s.last !== null) e2eAll.push(s.last - s.t0);
    else {
      e2eFailures++;
      progress(`  sample on ${target.url}: ${s.count}/${s.expected} notifications within ${CONTRACT_MS / 1000} s`);
    }
  };
  const chains = new Map<Target, Promise<void>>();
  const runs: Promise<void>[] = [];
  const e2eStarted = performance.now();
  let e2eCut = false;
  for (let i = 0; i < K; i++) {
    checkInterrupted();
    if (performance.now() - e2eStarted > PHASE_BUDGET_MS / 2) {
      e2eCut = true;
      progress(`  phase budget reached after ${i} samples started`);
      break;
    }
    const target = reserved[i % reserved.length]!;
    const run = (chains.get(target) ?? Promise.resolve()).then(() => runSample(target));
    chains.set(target, run);
    runs.push(run);
    if ((i + 1) % 10 === 0) progress(`  ${i + 1}/${K} started (${e2eAll.length} complete, first-row p50 so far ${fmtMs(summarise(e2eFirst).p50)})`);
    await sleep(E2E_STAGGER_MS);
  }
  await Promise.all(runs);
  const e2eSamplesRun = runs.length;

  // ---- Integrity: everything expected was written, once ---------------------------------------
  await stopChurn();
  const expectedTotal = churn.expected + e2eExpected;
  // Every (item, changed section) pair must end with a notification showing the section's final
  // stock (stock only rises here, so the highest `after.stock` notified is the last one). Unlike a
  // count, this holds when two changes fell between two polls and were seen as one.
  const finals: { event: string[]; section: string[]; stock: number[] } = { event: [], section: [], stock: [] };
  for (const t of targets) {
    const initial = sectionsFor(t.index);
    t.sections.forEach((sec, k) => {
      if (sec.stock !== initial[k]!.stock) {
        finals.event.push(t.url);
        finals.section.push(sec.name);
        finals.stock.push(sec.stock);
      }
    });
  }
  const finalState = async () => {
    const { rows } = await pool.query<{ pairs: string; ok: string; none: string }>(
      `WITH expected AS (SELECT * FROM unnest($1::text[], $2::text[], $3::int[]) AS e(event, section, stock)),
            latest AS (SELECT item_id, payload->>'section' AS section, max((payload->'after'->>'stock')::int) AS stock
                         FROM notifications WHERE kind = 'notification' GROUP BY 1, 2)
       SELECT count(*) AS pairs, count(*) FILTER (WHERE l.stock = e.stock) AS ok, count(*) FILTER (WHERE l.stock IS NULL) AS none
         FROM expected e JOIN watchlist_items i ON i.event = e.event AND NOT i.deleted
         LEFT JOIN latest l ON l.item_id = i.id AND l.section = e.section`,
      [finals.event, finals.section, finals.stock],
    );
    const r = rows[0]!;
    return { pairs: Number(r.pairs), ok: Number(r.ok), none: Number(r.none) };
  };
  const countNotifications = async () =>
    Number((await pool.query<{ n: string }>(`SELECT count(*) AS n FROM notifications WHERE kind = 'notification'`)).rows[0]!.n);
  progress(`churn stopped; waiting until every item has been notified of its target's last change...`);
  // Until all are there, or nothing new arrived for 15 s (then what is missing is lost, not late).
  const drainStarted = performance.now();
  let final = await finalState();
  let written = await countNotifications();
  let lastGrowth = performance.now();
  while (final.ok < final.pairs && performance.now() - lastGrowth < 15_000 && performance.now() - drainStarted < 45_000) {
    checkInterrupted();
    await sleep(2_000);
    const now = await countNotifications();
    if (now > written) lastGrowth = performance.now();
    written = now;
    final = await finalState();
    progress(`  ${((performance.now() - drainStarted) / 1000).toFixed(0)} s: ${final.ok}/${final.pairs} (item, changed section) pairs up to date, ${written} notifications`);
  }
  const drainSeconds = (performance.now() - drainStarted) / 1000;
  const stillArriving = final.ok < final.pairs && performance.now() - lastGrowth < 15_000;
  const backlogAtEnd = await backlogs();
  written = await countNotifications();
  const duplicates = Number(
    (
      await pool.query<{ n: string }>(
        `SELECT count(*) AS n FROM (
           SELECT 1 FROM notifications WHERE kind = 'notification'
            GROUP BY item_id, payload->>'snapshot_id', payload->>'section', payload->>'change_type' HAVING count(*) > 1) d`,
      )
    ).rows[0]!.n,
  );
  const pollerErrors: string[] = [];
  let pollsTotal = 0;
  let pollersSilent = 0;
  await inParallel(withItems, 2 * CONCURRENCY, async (t) => {
    const s = await bounded(client, () => client.workflow.getHandle(pollerWorkflowId(t.ref)).query(pollerStatusQuery));
    if (!s) pollersSilent++;
    if (s?.lastError) pollerErrors.push(`${t.url}: ${s.lastError}`);
    pollsTotal += s?.polls ?? 0;
  });
  const monitorsRunningEnd = await runningMonitors();
  const runtime = (performance.now() - started) / 1000;

  // ---- Results --------------------------------------------------------------------------------
  const interval = INTERVAL_MS / 1000;
  const expectedScrapes = targetsWithItems / interval;
  const perItemScrapes = liveIds.length / interval;
  const out: string[] = [];
  out.push(
    `\n## bench:monitors: ${liveIds.length} items on ${targetsWithItems} pf_03 targets, ${ACCOUNTS} accounts, MONITOR_INTERVAL_MS ${INTERVAL_MS} (jitter ±${config.MONITOR_JITTER_RATIO * 100}%), ` +
      `${os.cpus().length} CPUs, load average at start ${load.map((l) => l.toFixed(2)).join(' ')}\n`,
  );
  out.push('| scale | measured |', '|---|---|');
  const post = summarise(postLatencies);
  out.push(
    `| items created (POST /watchlist, ${CONCURRENCY} concurrent) | ${created} in ${createSeconds.toFixed(1)} s: **${(created / createSeconds).toFixed(0)} items/s**, ${createFailures} failures; POST p50 ${fmtMs(post.p50)}, p95 ${fmtMs(post.p95)}` +
      `${createCut ? `; **stopped at the ${CREATE_BUDGET_MS / 1000} s budget: ${created} of ${N}** (all ${N} would take ~${((N / Math.max(1, created)) * createSeconds).toFixed(0)} s at this rate; BENCH_CREATE_BUDGET_MS=0 to insist)` : ''} |`,
  );
  out.push(
    `| every monitor running, subscribed, with a baseline | ${ready ? `**${readyFromFirst.toFixed(1)} s** after the first POST, ${readyFromLast.toFixed(1)} s after the last` : `**NOT reached** in ${readyFromFirst.toFixed(0)} s (subscribed ${lastRound.subscribers}/${liveIds.length}, pollers with a snapshot ${lastRound.withSnapshot}/${targetsWithItems})`}; pollers' subscribers summed ${lastRound.subscribers}/${liveIds.length}, ${sample.length - sampledNotReady}/${sample.length} sampled monitors joined with a baseline; visibility: ${monitorsRunning ?? '?'} monitors running |`,
  );
  for (const [name, w] of [
    ['quiet', quiet],
    ['churn', churnWindow],
  ] as const) {
    const rate = w.scrapes / w.seconds;
    out.push(
      `| scrapes/s, ${name} window (${w.seconds.toFixed(0)} s, at the simulator) | **${rate.toFixed(1)}** vs ${expectedScrapes.toFixed(1)} expected (T/interval) vs ${perItemScrapes.toFixed(0)} if each item scraped (N/interval): ${(perItemScrapes / rate).toFixed(1)}x fewer |`,
    );
  }
  out.push(
    `| notifications/s, churn window (${perTick} of ${churnable.length} targets +1 stock every ${interval} s) | **${(churnWindow.notifications / churnWindow.seconds).toFixed(1)}** vs ${churnExpectedPerSecond.toFixed(1)} expected; scrape → row p50 ${fmtMs(churnWindow.lag.p50)}, p95 ${fmtMs(churnWindow.lag.p95)}, max ${fmtMs(churnWindow.lag.max)} |`,
  );
  out.push(`| task queue backlogs at the end of the windows | quiet: ${quiet.backlogEnd}; churn: ${churnWindow.backlogEnd} |`);
  out.push('');
  out.push(
    `| process (CPU in % of one core) | creation + ramp-up (${createCpu.seconds.toFixed(0)} s) | quiet window | churn window | RSS max MiB (ramp-up / windows) |`,
    '|---|---:|---:|---:|---:|',
  );
  for (const w of watched) {
    const rss = Math.round(Math.max(quiet.rssMax[w.name] ?? 0, churnWindow.rssMax[w.name] ?? 0));
    out.push(
      `| ${w.name} | ${fmt1(createCpu.percent[w.name]!)} | ${fmt1(quiet.cpu.percent[w.name]!)} | ${fmt1(churnWindow.cpu.percent[w.name]!)} | ${Math.round(createRss[w.name] ?? 0)} / ${rss} |`,
    );
  }
  const ours = (w: CpuWindow) => Object.values(w.percent).reduce((s, p) => s + p, 0);
  out.push(
    `| whole machine (of ${quiet.cpu.cores * 100} %) | ${fmt1(createCpu.machinePercent)} | ${fmt1(quiet.cpu.machinePercent)} | ${fmt1(churnWindow.cpu.machinePercent)} | |`,
    `| machine minus the above (other work on the machine) | ${fmt1(createCpu.machinePercent - ours(createCpu))} | ${fmt1(quiet.cpu.machinePercent - ours(quiet.cpu))} | ${fmt1(churnWindow.cpu.machinePercent - ours(churnWindow.cpu))} | |`,
    `| CPU taken by the hypervisor (steal), not in the above | ${fmt1(createCpu.stealPercent)} | ${fmt1(quiet.cpu.stealPercent)} | ${fmt1(churnWindow.cpu.stealPercent)} | |`,
    `| busiest other processes (running at the end of the phase) | ${othersText(createCpu)} | ${othersText(quiet.cpu)} | ${othersText(churnWindow.cpu)} | |`,
    `| this process's event loop delay p50 / p99 / max | ${loopText(createLoop)} | ${loopText(quiet.loop)} | ${loopText(churnWindow.loop)} | |`,
  );
  out.push('');
  // CPU per unit of work, for the service's processes (this one, the Temporal server, PostgreSQL;
  // not the simulator). Polling runs all the time, so its cost is taken off the others.
  const serviceKeys = watched.map((w) => w.name).filter((n) => !n.startsWith('simulator'));
  const cpuSecondsOf = (w: CpuWindow, key: string) => ((w.percent[key] ?? 0) / 100) * w.seconds;
  const perPoll = Object.fromEntries(serviceKeys.map((k) => [k, (1000 * cpuSecondsOf(quiet.cpu, k)) / Math.max(1, quiet.scrapes)]));
  const perPollTotal = Object.values(perPoll).reduce((a, b) => a + b, 0);
  const perUnit = (w: CpuWindow, polls: number, units: number, k: string) => (1000 * cpuSecondsOf(w, k) - polls * perPoll[k]!) / Math.max(1, units);
  out.push(
    `| CPU ms per unit of work | ${serviceKeys.join(' | ')} | total |`,
    `|---|${serviceKeys.map(() => '---:').join('|')}|---:|`,
    `| one poll (quiet window: timer, workflow tasks, scrape activity, snapshot compare) | ${serviceKeys.map((k) => fmt1(perPoll[k]!)).join(' | ')} | **${fmt1(perPollTotal)}** |`,
  );
  const unitRow = (label: string, w: CpuWindow, polls: number, units: number) => {
    const vals = serviceKeys.map((k) => perUnit(w, polls, units, k));
    return `| ${label} | ${vals.map(fmt1).join(' | ')} | **${fmt1(vals.reduce((a, b) => a + b, 0))}** |`;
  };
  if (ready) out.push(unitRow(`one item created, to subscribed with a baseline (ramp-up, less its ${createPolls} polls)`, createCpu, createPolls, created));
  else out.push(`| one item created, to subscribed with a baseline | not measurable: the ramp-up did not finish |${' |'.repeat(serviceKeys.length)}`);
  out.push(unitRow(`one notification (churn window, less its ${churnWindow.scrapes} polls)`, churnWindow.cpu, churnWindow.scrapes, churnWindow.notifications));
  const cores = quiet.cpu.cores;
  const sustainable = (cores * 1000) / perPollTotal;
  out.push(
    `| what ${cores} cores sustain at that cost, with nothing else running | polls: ~${sustainable.toFixed(0)}/s, i.e. ~${(sustainable * interval).toFixed(0)} targets at a ${interval} s interval ` +
      `(asked: ${targetsWithItems} targets = ${expectedScrapes.toFixed(0)} polls/s) |${' |'.repeat(serviceKeys.length)}`,
  );
  out.push('');
  const profiles: [string, ProfileSummary | null][] = [
    ['creation + ramp-up', createProfile],
    ['quiet window', quietProfile],
    ['churn window', churnProfile],
  ];
  if (profiles.some(([, p]) => p)) {
    const areas = [...new Set(profiles.flatMap(([, p]) => (p?.areas ?? []).filter(([, v]) => v >= 1).map(([a]) => a)))];
    const pct = (p: ProfileSummary | null, a: string) => {
      const v = p?.areas.find(([x]) => x === a)?.[1];
      return v === undefined ? '' : `${v.toFixed(1)} %`;
    };
    out.push(
      `| this process's main thread, sampled (share of busy time) | ${profiles.map(([n, p]) => `${n}${p ? `: ${p.busySeconds.toFixed(0)} s busy of ${p.wallSeconds.toFixed(0)} s` : ''}`).join(' | ')} |`,
      `|---|${profiles.map(() => '---:').join('|')}|`,
    );
    for (const a of areas) out.push(`| ${a} | ${profiles.map(([, p]) => pct(p, a)).join(' | ')} |`);
    out.push('');
    for (const [name, p] of profiles) {
      if (!p) continue;
      out.push(`| hottest functions, ${name} | self % |`, '|---|---:|');
      for (const [f, v] of p.functions.slice(0, 10)) out.push(`| \`${f.replace(/\|/g, '/')}\` | ${v.toFixed(1)} |`);
      out.push('');
    }
  }
  const row = (name: string, t: Timed | { values: number[]; failures: number }, aim = true) => {
    const s: Summary = summarise(t.values);
    const verdict = !aim ? '' : s.n === 0 ? 'no data' : t.failures ? 'NOT met (failures)' : s.p95 < AIM_MS ? 'met' : s.max < CONTRACT_MS ? `contract met, aim not (p95 ${fmtMs(s.p95)})` : 'NOT met';
    return `| ${name} | ${s.n} | ${fmtMs(s.p50)} | ${fmtMs(s.p95)} | ${fmtMs(s.max)} | ${t.failures} | ${verdict} |`;
  };
  out.push(`| propagation, under load (churn running)${propagationCut ? `; stopped at the ${PHASE_BUDGET_MS / 1000} s phase budget` : ''} | n | p50 | p95 | max | failures | aim: p95 < 2 s (contract 60 s) |`, '|---|---:|---:|---:|---:|---:|---|');
  out.push(row('POST /watchlist reply', postReply, false));
  out.push(row('POST → monitor subscribed with a baseline (watched target)', createReady));
  out.push(row('PATCH change_type → monitor config version applied', patchApplied));
  out.push(row('DELETE → monitor workflow COMPLETED', deleteCompleted));
  out.push(row('POST → subscribed with a baseline (new target: poller starts, first scrape)', newTargetReady));
  out.push('');
  out.push(`| end to end (interval ${interval} s; floor ≈ interval/2 + processing)${e2eCut ? `; ${e2eSamplesRun} of ${K} started within the phase budget` : ''} | n | p50 | p95 | max | failures | |`, '|---|---:|---:|---:|---:|---:|---|');
  out.push(row('simulator PUT → first notification row seen (LISTEN + read)', { values: e2eFirst, failures: e2eFailures }, false));
  out.push(row(`simulator PUT → all ~${Math.round(liveIds.length / targetsWithItems)} items' rows seen`, { values: e2eAll, failures: e2eFailures }, false));
  out.push(row('  of which: PUT → the scrape that saw it done (poll wait + scrape)', { values: e2ePollWait, failures: 0 }, false));
  out.push(row('  of which: scrape → first row seen (processing)', { values: e2eProcessing, failures: 0 }, false));
  out.push('');
  // A monitor that was not yet subscribed when its target changed takes the changed inventory as
  // its baseline (by design), so losses can only be judged when every monitor was ready; and work
  // still queued in Temporal is late, not lost.
  const integrityVerdict = () => {
    if (!ready) return `; **not a loss verdict**: only ${lastRound.subscribers} of ${liveIds.length} monitors were subscribed when the changes began (the others take the changed inventory as their baseline)`;
    if (stillArriving) return '; still arriving when the check gave up (late, not necessarily lost)';
    if ((backlogAtEnd.mw ?? 0) > 0 || (backlogAtEnd.ma ?? 0) > 0) return `; nothing new for 15 s but work still queued in Temporal (${backlogAtEnd.text}): late, not necessarily lost`;
    return '; nothing new for 15 s and nothing queued in Temporal: **lost**';
  };
  out.push('| integrity | |', '|---|---|');
  out.push(
    `| every item notified of its target's last change (per changed section) | **${final.ok}/${final.pairs}** (item, section) pairs, ${drainSeconds.toFixed(0)} s after the churn stopped` +
      `${final.ok < final.pairs ? `: ${final.pairs - final.ok} behind (${final.none} never notified for that section)${integrityVerdict()}` : ''} |`,
  );
  out.push(
    `| notifications written vs one per item per change (churn ${churn.changes} changes + ${e2eSamplesRun} end-to-end) | ${written} of ${expectedTotal}` +
      `${written < expectedTotal ? ` (${expectedTotal - written} fewer: changes that fell between two polls are seen as one; see the line above for losses)` : written > expectedTotal ? ` (**${written - expectedTotal} extra**)` : ''} |`,
  );
  out.push(`| duplicates (same item, snapshot, section, change type) | ${duplicates} |`);
  out.push(`| churn ticks | ${churn.ticks} (${churn.skipped} skipped: the previous tick's PUTs still running; ${churn.failures} PUT failures) |`);
  out.push(
    `| pollers reporting an error at the end | ${pollerErrors.length}${pollerErrors.length ? ` (${pollerErrors.slice(0, 3).join('; ')})` : ''}; ${pollersSilent} did not answer a status query within ${QUERY_TIMEOUT_MS / 1000} s; polls in their current runs: ${pollsTotal} |`,
  );
  out.push(
    `| monitors running at the end (visibility) | ${monitorsRunningEnd ?? '?'} (expected ${liveIds.length}${sampleItemsNotGone ? `, plus ${sampleItemsNotGone} propagation sample items whose monitor was not seen COMPLETED` : ''}) |`,
  );
  const warnings = [...logCounts.entries()].sort((a, b) => b[1] - a[1]);
  out.push(`| log lines at warn and above | ${warnings.length ? warnings.slice(0, 8).map(([k, n]) => `${n} × ${k.replace(/\|/g, '/')}`).join('; ') : 'none'} |`);
  out.push(`| runtime | ${runtime.toFixed(0)} s |`);
  console.log(out.join('\n'));
}

main()
  .then(
    async () => {
      await cleanup();
      process.exit(0);
    },
    async (err: unknown) => {
      if (!interrupted) console.error(err);
      await cleanup();
      process.exit(1);
    },
  );
