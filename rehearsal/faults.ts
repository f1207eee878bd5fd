// The fault schedule: one fault at a time, each its own window in the report. A window runs from
// the fault's start to the next fault's start: the part goes down (downAt), comes back (backAt),
// the API is waited for (the recovery wait: GET /usage through nginx answers again), then the
// load runs on for the settle time so late effects land in the window that caused them.
import { Client, Connection } from '@temporalio/client';
import pg from 'pg';
import type { Lifecycle } from '../bench/monitors/lifecycle.ts';
import { acceptsConnections } from '../src/runtime/ports.ts';
import { sleep } from '../bench/monitors/support.ts';
import type { FaultName, RehearsalConfig } from './config.ts';
import type { Answer } from '../test/support/webhook-receiver.ts';
import type { Load } from './load.ts';
import { TemporalProductionServer, viaPort, type NodeProcess, type Topology } from './topology.ts';

/** What a fault takes away; a route needs some of these (truth.ts ROUTE_NEEDS). */
export type Part = 'gateway-replica' | 'stream-replica' | 'scrape-worker' | 'scrape-worker-replica' | 'deliver-worker' | 'webhook-receiver' | 'platform' | 'nginx' | 'postgres' | 'temporal' | 'none';

export interface Window {
  name: string;
  title: string;
  part: Part;
  start: number;
  /** When the part went down and came back (the same instant for an instant fault). */
  downAt: number | null;
  backAt: number | null;
  /** When GET /usage through nginx answered 200 again after backAt (null: not within the wait). */
  apiBackAt: number | null;
  /** When every watched target had been polled again after backAt (the simulator's log; null: not within the wait). */
  pollsBackAt: number | null;
  end: number;
  notes: string[];
  skipped: string | null;
  /** Why the fault itself failed (it threw), or null: such a window fails the verdict. */
  faultError: string | null;
  /**
   * A scrape worker lost while another runs: when every watched target had been polled again
   * with it still down (the others took its shards over); null: not within the wait. Absent for
   * every other fault.
   */
  takeoverAt?: number | null;
}

/** How long a scrape worker's death or stall is waited out for the others to take its shards over. */
const TAKEOVER_WAIT_MS = 60_000;

interface FaultDef {
  title: string;
  part: Part;
  /** Does the fault; sets downAt and backAt on the window. Returns why it was skipped, or null. */
  run(w: Window): Promise<string | null>;
}

const PG_LATENCY_MS = 300;
/** A slow receiver's answer: well inside the sender's 10 s time-out (a later one is a failed attempt, retried). */
const RECEIVER_SLOW_MS = 4_000;
/** A slow platform's answer: twice the rehearsal's poll interval. */
const PLATFORM_SLOW_MS = 4_000;

export function faultDefs(topo: Topology, cfg: RehearsalConfig, load: Load, progress: (m: string) => void): Record<FaultName, FaultDef> {
  const cut = cfg.cutWorker === 'scrape' ? topo.scrapeWorker : topo.deliverWorker;
  /**
   * The scrape-side fault's worker, chosen as it starts: of several scrape workers, the one whose
   * loss takes the most shard loops away (a worker just restarted may run none, and its loss
   * would show no takeover at all). Its choice goes into the window's notes.
   */
  const scrapeTarget = async (w: Window, fallback: NodeProcess): Promise<NodeProcess> => {
    if (topo.pollers.length < 2) return fallback;
    const loops = await shardLoopsByPid(topo.temporal.address);
    const busiest = [...topo.pollers].sort((a, b) => (loops.get(b.pid ?? -1) ?? 0) - (loops.get(a.pid ?? -1) ?? 0))[0]!;
    w.notes.push(`shard loops running now: ${topo.pollers.map((p) => `${p.name} ${loops.get(p.pid ?? -1) ?? 0}`).join(', ')}; the fault takes ${busiest.name}`);
    return busiest;
  };
  const cutPart: Part = cfg.cutWorker === 'scrape' ? 'scrape-worker' : 'deliver-worker';
  const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

  const takeover = topo.pollers.length > 1;
  /**
   * With the scrape worker `n` down (killed or stopped), until the other pollers have polled
   * every target: its shard pollers' heartbeats time out (15 s) and their retries go to a live
   * worker. Recorded on the window; the verdict wants it within 30 s.
   */
  const awaitTakeover = async (w: Window, n: NodeProcess) => {
    w.takeoverAt = await waitForPolls(topo, load, w.downAt!, TAKEOVER_WAIT_MS);
    const others = topo.pollers.filter((p) => p !== n).map((p) => p.name).join(', ');
    w.notes.push(
      w.takeoverAt
        ? `${others} polled every target again ${s(w.takeoverAt - w.downAt!)} after ${n.name} went down, with it still down`
        : `${others} had NOT polled every target within ${s(TAKEOVER_WAIT_MS)} of ${n.name} going down`,
    );
  };

  /** Every receiver answering so for the cut's length (in this process: set is applied), then as usual. */
  const receiversAnswer = async (w: Window, answer: Answer) => {
    const receivers = load.receivers();
    for (const r of receivers) r.fallback = answer;
    w.notes.push(`${receivers.length} receivers answering ${answer === 'hang' ? 'nothing' : `${answer.status}${answer.delayMs ? ` after ${s(answer.delayMs)}` : ''}`}`);
    w.downAt = Date.now();
    await sleep(cfg.cutMs);
    for (const r of receivers) r.fallback = { status: 204 };
    w.backAt = Date.now();
    return null;
  };

  /** The simulator answering `targets` so for the cut's length, then as usual; read back from its store first. */
  const platformBehaves = async (w: Window, targets: Load['targets'], fields: Parameters<Load['setBehaviour']>[1] & object) => {
    load.setBehaviour(targets, fields);
    const off = targets.filter((t) => topo.sim.store.get('pf_03', t.key)?.behaviour !== fields.behaviour);
    if (off.length) throw new Error(`${off.length} targets read back without behaviour ${fields.behaviour}`);
    w.notes.push(`${targets.length} of ${load.targets.length} targets read back as ${fields.behaviour}`);
    w.downAt = Date.now();
    await sleep(cfg.cutMs);
    load.setBehaviour(targets, null);
    w.backAt = Date.now();
    return null;
  };

  /** SIGKILL, then the supervisor's restart at once (compose: restart unless-stopped). */
  const killAndRestart = (n: NodeProcess) => async (w: Window) => {
    w.downAt = Date.now();
    await n.kill();
    const ms = await n.start();
    w.backAt = Date.now();
    w.notes.push(`${n.name} killed (SIGKILL to its process group) and restarted: serving again in ${s(ms)}`);
    return null;
  };

  /** nginx taken down (killed or stopped), then started again at once. */
  const restartNginx = (down: () => Promise<void>) => async (w: Window) => {
    w.downAt = Date.now();
    await down();
    const ms = await topo.nginx.start();
    w.backAt = Date.now();
    w.notes.push(`nginx answering again ${ms} ms after its start`);
    return null;
  };

  /**
   * A window of `ms` with a change to Toxiproxy proxies: applied, verified (read back and its
   * effect measured; a fault that did not take throws), and only then does its clock start.
   */
  const withProxies = async (w: Window, ms: number, apply: () => Promise<void>, verify: () => Promise<string>, undo: () => Promise<void>) => {
    await apply();
    w.notes.push(await verify());
    w.downAt = Date.now();
    await sleep(ms);
    await undo();
    w.backAt = Date.now();
  };
  /** A cut: each proxy read back disabled, and a new connection to it refused. */
  const cutProxies = (w: Window, names: string[]) =>
    withProxies(
      w,
      cfg.cutMs,
      async () => {
        for (const n of names) await topo.toxi.setEnabled(n, false);
      },
      async () => {
        for (const n of names) {
          const state = await topo.toxi.inspect(n);
          if (state.enabled) throw new Error(`proxy ${n} still enabled after it was disabled`);
          if (await connects(state.listen)) throw new Error(`proxy ${n} disabled, but a connection to ${state.listen} was accepted`);
        }
        return `${names.join(', ')}: read back disabled, a new connection to each refused`;
      },
      async () => {
        for (const n of names) await topo.toxi.setEnabled(n, true);
      },
    );

  return {
    'gateway-kill': { title: 'SIGKILL of a gateway, then its restart', part: 'gateway-replica', run: killAndRestart(topo.gateways[0]!) },
    'stream-kill': { title: 'SIGKILL of a stream node, then its restart', part: 'stream-replica', run: killAndRestart(topo.streams[0]!) },
    'scrape-worker-kill': takeover
      ? {
          title: `SIGKILL of the scrape worker running the most shard loops, down until the other scrape workers poll every target (at most ${s(TAKEOVER_WAIT_MS)}), then its restart`,
          part: 'scrape-worker-replica',
          run: async (w) => {
            const n = await scrapeTarget(w, topo.scrapeWorker);
            w.downAt = Date.now();
            await n.kill();
            await awaitTakeover(w, n);
            const ms = await n.start();
            w.backAt = Date.now();
            w.notes.push(`${n.name} restarted: serving again in ${s(ms)}`);
            return null;
          },
        }
      : { title: `SIGKILL of the ${topo.scrapeWorker.name}, then its restart`, part: cfg.workers === 'split' ? 'scrape-worker' : 'none', run: killAndRestart(topo.scrapeWorker) },
    'deliver-worker-kill': { title: `SIGKILL of the ${topo.deliverWorker.name}, then its restart`, part: cfg.workers === 'split' ? 'deliver-worker' : 'none', run: killAndRestart(topo.deliverWorker) },
    'nginx-kill': { title: 'SIGKILL of nginx (master and workers), then its restart', part: 'nginx', run: restartNginx(() => topo.nginx.kill()) },
    'worker-sigstop': {
      title:
        takeover && cfg.cutWorker === 'scrape'
          ? `SIGSTOP of the scrape worker running the most shard loops for at least ${s(cfg.stopMs)} and until the other scrape workers poll every target, then SIGCONT`
          : `SIGSTOP of the ${cut.name} for ${s(cfg.stopMs)} (past the shard pollers' 15 s heartbeat timeout), then SIGCONT`,
      part: takeover && cfg.cutWorker === 'scrape' ? 'scrape-worker-replica' : cfg.workers === 'split' ? cutPart : 'none',
      run: async (w) => {
        const stop = cfg.cutWorker === 'scrape' ? await scrapeTarget(w, cut) : cut;
        w.downAt = Date.now();
        stop.signal('SIGSTOP');
        // Applied only if the kernel says so: every process of its group stopped.
        const stopped = await stop.waitForState('T', 2_000);
        if (!stopped.ok) throw new Error(`SIGSTOP sent to ${stop.name} but not applied: ${stopped.detail}`);
        w.notes.push(`${stop.name} stopped: ${stopped.detail} (read from /proc)`);
        if (takeover && cfg.cutWorker === 'scrape') await awaitTakeover(w, stop);
        const left = w.downAt + cfg.stopMs - Date.now();
        if (left > 0) await sleep(left);
        stop.signal('SIGCONT');
        w.backAt = Date.now();
        return null;
      },
    },
    'pg-restart': {
      title: 'PostgreSQL restarted (fast shutdown, then a start on the same data and port)',
      part: 'postgres',
      run: async (w) => {
        if (topo.pg.restartSkipReason) return topo.pg.restartSkipReason;
        w.downAt = Date.now();
        const ms = await topo.pg.restart();
        w.backAt = Date.now();
        w.notes.push(`PostgreSQL stopped and started on the same data and port: accepting connections again after ${s(ms)}`);
        return null;
      },
    },
    'pg-drop-connections': {
      title: 'every connection to the service database dropped (pg_terminate_backend of all but our own)',
      part: 'postgres',
      run: async (w) => {
        const client = new pg.Client({ connectionString: topo.pg.adminUrl, application_name: 'rehearsal-terminate' });
        await client.connect();
        try {
          // The backends are listed first, materialized: in one WHERE, the terminate could be
          // evaluated before the test that spares this connection.
          const { rows } = await client.query<{ pid: number }>(
            `WITH others AS MATERIALIZED (SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid())
             SELECT pid FROM others WHERE pg_terminate_backend(pid)`,
            [topo.pg.database],
          );
          // Applied only if there was something to drop, and it is gone.
          if (rows.length === 0) throw new Error('no backend of the service database to terminate');
          const pids = rows.map((r) => r.pid);
          const deadline = Date.now() + 5_000;
          let left = pids.length;
          while (left > 0 && Date.now() < deadline) {
            left = (await client.query<{ n: number }>('SELECT count(*)::int AS n FROM pg_stat_activity WHERE pid = ANY($1)', [pids])).rows[0]!.n;
            if (left > 0) await sleep(20);
          }
          if (left > 0) throw new Error(`${left} of ${pids.length} terminated backends still there after 5 s`);
          w.downAt = w.backAt = Date.now();
          w.notes.push(`${pids.length} backends terminated, every one gone from pg_stat_activity`);
        } finally {
          await client.end();
        }
        return null;
      },
    },
    'pg-slow': {
      title: `PostgreSQL ${PG_LATENCY_MS} ms slower for ${s(cfg.slowMs)} (a latency toxic on every process's path to it)`,
      part: 'postgres',
      run: async (w) => {
        const names = [...topo.proxies.values()].map((p) => p.pg.name);
        await withProxies(
          w,
          cfg.slowMs,
          async () => {
            for (const n of names) await topo.toxi.addToxic(n, { name: 'slow', type: 'latency', attributes: { latency: PG_LATENCY_MS, jitter: 0 } });
          },
          async () => {
            for (const n of names) {
              const toxic = (await topo.toxi.inspect(n)).toxics.find((t) => t.name === 'slow');
              if (toxic?.attributes.latency !== PG_LATENCY_MS) throw new Error(`proxy ${n} reads back without its ${PG_LATENCY_MS} ms latency toxic`);
            }
            // Its effect, measured: a query through the first proxy, on a connection opened before it is timed.
            const first = topo.proxies.values().next().value!.pg;
            const ms = await timedQuery(viaPort(topo.pg.adminUrl, first.port));
            if (ms < PG_LATENCY_MS) throw new Error(`a query through ${first.name} took ${ms} ms: the latency toxic did not take`);
            return `${names.length} proxies read back with the toxic; SELECT 1 through ${first.name} took ${ms} ms`;
          },
          async () => {
            for (const n of names) await topo.toxi.removeToxic(n, 'slow');
          },
        );
        return null;
      },
    },
    'worker-cut-pg': {
      title: `the ${cut.name} cut off from PostgreSQL for ${s(cfg.cutMs)} (its proxy disabled: connections closed, new ones refused)`,
      part: cfg.workers === 'split' ? cutPart : 'none',
      run: async (w) => {
        await cutProxies(w, [topo.proxies.get(cut.name)!.pg.name]);
        return null;
      },
    },
    'worker-cut-temporal': {
      title: `the ${cut.name} cut off from Temporal for ${s(cfg.cutMs)} (its proxy disabled)`,
      part: cfg.workers === 'split' ? cutPart : 'none',
      run: async (w) => {
        await cutProxies(w, [topo.proxies.get(cut.name)!.temporal!.name]);
        return null;
      },
    },
    'temporal-down': {
      title: `Temporal SIGKILLed (${topo.temporal.processNames.length > 1 ? 'every process' : 'its process'}), down ${s(cfg.temporalDownMs)}, started again on its state; meanwhile a gateway restarted`,
      part: 'temporal',
      run: async (w) => {
        w.downAt = Date.now();
        await topo.temporal.kill();
        await sleep(Math.min(5_000, cfg.temporalDownMs / 4));
        const g = topo.gateways[1]!;
        progress(`  restarting ${g.name} while Temporal is down...`);
        await g.stop();
        const outcome = await g.launch(Math.max(15_000, w.downAt + cfg.temporalDownMs - Date.now() - 5_000));
        if (outcome.ready) {
          const account = load.accounts[0]!;
          const direct = `http://127.0.0.1:${g.env.PORT}`;
          const answers = [];
          // Recorded like the load's own requests: a paid probe's charge must match what it saw.
          for (const [path, credits] of [['/usage', 0], ['/watchlist', 0], ['/svc/data/ping', 1], ['/events/ping', 5]] as const) {
            const { status } = await load.call(`GET ${path} (straight to ${g.name})`, 'GET', path, account.keys[0]!, account.id, credits, undefined, 10_000, direct);
            answers.push(`${path} ${status || 'no answer'}`);
          }
          w.notes.push(`gateway started while Temporal is down: came up in ${s(outcome.ms)}; on its own port: ${answers.join(', ')}`);
        } else {
          w.notes.push(`gateway started while Temporal is down: did NOT come up (${s(outcome.ms)}): ${outcome.why}`);
        }
        const left = w.downAt + cfg.temporalDownMs - Date.now();
        if (left > 0) await sleep(left);
        const ms = await topo.temporal.restart();
        w.backAt = Date.now();
        w.notes.push(`Temporal down ${s(w.backAt - w.downAt)} in all; serving again ${s(ms)} after its start`);
        if (!g.running) {
          const again = await g.start();
          w.notes.push(`${g.name} started again after Temporal's return: serving in ${s(again)}`);
        }
        return null;
      },
    },
    'deliver-worker-cut-pg': {
      title: `the ${topo.deliverWorker.name} cut off from PostgreSQL for ${s(cfg.cutMs)} (its proxy disabled)`,
      part: 'deliver-worker',
      run: async (w) => {
        await cutProxies(w, [topo.proxies.get(topo.deliverWorker.name)!.pg.name]);
        return null;
      },
    },
    'deliver-worker-cut-temporal': {
      title: `the ${topo.deliverWorker.name} cut off from Temporal for ${s(cfg.cutMs)} (its proxy disabled)`,
      part: 'deliver-worker',
      run: async (w) => {
        await cutProxies(w, [topo.proxies.get(topo.deliverWorker.name)!.temporal!.name]);
        return null;
      },
    },
    'stream-cut-pg': {
      title: `${topo.streams[0]!.name} cut off from PostgreSQL for ${s(cfg.cutMs)} (its proxy disabled); its clients stay or move to the other node`,
      part: 'stream-replica',
      run: async (w) => {
        await cutProxies(w, [topo.proxies.get(topo.streams[0]!.name)!.pg.name]);
        return null;
      },
    },
    'webhook-receiver-down': {
      title: `every webhook receiver down for ${s(cfg.cutMs)} (connections refused), then up on the same port`,
      part: 'webhook-receiver',
      run: async (w) => {
        const receivers = load.receivers();
        for (const r of receivers) await r.down();
        for (const r of receivers) if (await connects(new URL(r.url).host)) throw new Error(`the receiver at ${r.url} is down but accepted a connection`);
        w.notes.push(`${receivers.length} receivers down: a new connection to each refused`);
        w.downAt = Date.now();
        await sleep(cfg.cutMs);
        for (const r of receivers) await r.up();
        w.backAt = Date.now();
        return null;
      },
    },
    'webhook-receiver-slow': {
      title: `every webhook receiver answering ${s(RECEIVER_SLOW_MS)} late for ${s(cfg.cutMs)} (inside the sender's 10 s time-out)`,
      part: 'webhook-receiver',
      run: (w) => receiversAnswer(w, { status: 204, delayMs: RECEIVER_SLOW_MS }),
    },
    'webhook-receiver-500': {
      title: `every webhook receiver answering 500 for ${s(cfg.cutMs)}: each delivery is retried on its schedule, and arrives once`,
      part: 'webhook-receiver',
      run: (w) => receiversAnswer(w, { status: 500 }),
    },
    'platform-slow': {
      title: `pf_03 answering every watched event ${s(PLATFORM_SLOW_MS)} late for ${s(cfg.cutMs)}`,
      part: 'platform',
      run: (w) => platformBehaves(w, load.targets, { behaviour: 'slow', delay_ms: PLATFORM_SLOW_MS }),
    },
    'platform-refusing': {
      title: `pf_03 refusing every watched event (429, Retry-After 5 s) for ${s(cfg.cutMs)}`,
      part: 'platform',
      run: (w) => platformBehaves(w, load.targets, { behaviour: 'blocked', blocked_status: 429, retry_after_s: 5 }),
    },
    'platform-half': {
      title: `pf_03 answering half the watched events with a page whose offers never load (a partial page) for ${s(cfg.cutMs)}: no false alert`,
      part: 'platform',
      run: (w) => platformBehaves(w, load.targets.filter((_, i) => i % 2 === 0), { behaviour: 'malformed' }),
    },
    ...temporalServiceKills(topo, s),
    'temporal-cut-pg': {
      title: `Temporal cut off from PostgreSQL for ${s(cfg.cutMs)} (its proxy disabled: connections closed, new ones refused)`,
      part: 'temporal',
      run: async (w) => {
        const proxy = topo.temporal instanceof TemporalProductionServer ? topo.temporal.pgProxy : null;
        if (!proxy) throw new Error('the dev server keeps its state in SQLite: it has no database to cut');
        await cutProxies(w, [proxy]);
        return null;
      },
    },
    'nginx-reload': {
      title: 'nginx reloaded (nginx -s reload)',
      part: 'none',
      run: async (w) => {
        w.downAt = w.backAt = Date.now();
        topo.nginx.reload();
        return null;
      },
    },
    'nginx-restart': { title: 'nginx restarted (nginx -s stop, then a start)', part: 'nginx', run: restartNginx(() => topo.nginx.stop()) },
  };
}

/** One fault per Temporal service process: SIGKILL, then its restart at once (a supervisor's). */
function temporalServiceKills(topo: Topology, s: (ms: number) => string): Record<`temporal-${'frontend' | 'history' | 'matching' | 'worker'}-kill`, FaultDef> {
  const kill = (service: 'frontend' | 'history' | 'matching' | 'worker'): FaultDef => ({
    title: `SIGKILL of Temporal's ${service} service (its own process), then its restart`,
    part: 'temporal',
    run: async (w) => {
      if (!topo.temporal.processNames.includes(service)) throw new Error(`Temporal runs no ${service} process of its own here (REHEARSAL_TEMPORAL_LAYOUT=per-service)`);
      const pid = topo.temporal.pid(service);
      w.downAt = Date.now();
      await topo.temporal.kill(service);
      const ms = await topo.temporal.restart(service);
      w.backAt = Date.now();
      w.notes.push(`Temporal's ${service} (pid ${pid}) killed and started again: listening ${s(ms)} after its start (pid ${topo.temporal.pid(service)})`);
      return null;
    },
  });
  return {
    'temporal-frontend-kill': kill('frontend'),
    'temporal-history-kill': kill('history'),
    'temporal-matching-kill': kill('matching'),
    'temporal-worker-kill': kill('worker'),
  };
}

/**
 * Until every watched target has been requested since `since` (the simulator's own log: polling
 * runs again for all of them), at most `ms`; when that was. The next fault waits for it, so a
 * fault's late effects stay in its own window.
 */
async function waitForPolls(topo: Topology, load: Load, since: number, ms: number): Promise<number | null> {
  const deadline = Date.now() + ms;
  const keys = new Set(load.targets.map((t) => t.key));
  while (Date.now() < deadline) {
    const polled = new Set(topo.sim.requests.since(since, 'pf_03').map((r) => r.key));
    if ([...keys].every((k) => polled.has(k))) return Date.now();
    await sleep(250);
  }
  return null;
}

/** GET /usage through nginx until it answers 200 (at most `ms`); when it did. */
async function waitForApi(topo: Topology, key: string, ms: number): Promise<number | null> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    try {
      const res = await fetch(`${topo.publicUrl}/usage`, { headers: { apikey: key }, signal: AbortSignal.timeout(5_000) });
      await res.arrayBuffer();
      if (res.status === 200) return Date.now();
    } catch {
      // not yet
    }
    await sleep(250);
  }
  return null;
}

export async function runSchedule(topo: Topology, cfg: RehearsalConfig, load: Load, life: Lifecycle, progress: (m: string) => void, runStarted: number): Promise<Window[]> {
  const defs = faultDefs(topo, cfg, load, progress);
  const windows: Window[] = [];
  const key = load.accounts[0]!.keys[0]!;
  for (const [i, name] of cfg.faults.entries()) {
    life.check();
    const def = defs[name];
    const w: Window = { name, title: def.title, part: def.part, start: Date.now(), downAt: null, backAt: null, apiBackAt: null, pollsBackAt: null, end: 0, notes: [], skipped: null, faultError: null };
    windows.push(w);
    progress(`fault ${i + 1}/${cfg.faults.length} ${name}: ${def.title}`);
    try {
      w.skipped = await def.run(w);
    } catch (err) {
      w.faultError = err instanceof Error ? err.message : String(err);
      w.notes.push(`the fault itself failed: ${w.faultError}`);
      progress(`  ${name}: the fault itself failed: ${err instanceof Error ? err.message : String(err)}`);
    }
    if (w.skipped) {
      progress(`  ${name}: skipped (${w.skipped})`);
      w.end = Date.now();
      continue;
    }
    const back = w.backAt ?? Date.now();
    w.apiBackAt = await waitForApi(topo, key, 60_000);
    w.pollsBackAt = await waitForPolls(topo, load, back, 120_000);
    const after = (t: number | null, what: string, limit: string) => (t ? `${what} ${((t - back) / 1000).toFixed(1)} s later` : `${what} NOT within ${limit}`);
    progress(
      `  ${name}: part back ${w.downAt && w.backAt ? `after ${((w.backAt - w.downAt) / 1000).toFixed(1)} s` : '(no part came back)'}` +
        `, ${after(w.apiBackAt, 'GET /usage through nginx answering', '60 s')}, ${after(w.pollsBackAt, 'every target polled again', '120 s')}` +
        `; load runs on ${(cfg.settleMs / 1000).toFixed(0)} s (elapsed ${fmtElapsed(Date.now() - runStarted)})`,
    );
    for (const note of w.notes) progress(`    ${note}`);
    const until = Date.now() + cfg.settleMs;
    while (Date.now() < until) {
      life.check();
      await sleep(Math.min(1_000, until - Date.now()));
    }
    for (const n of topo.nodes) {
      if (!n.running) {
        progress(`  ${n.name} is not running (it exited by itself: ${n.unexpectedExits.map((e) => e.how).join(', ') || '?'}); starting it again`);
        w.notes.push(`${n.name} found not running after the window; started again`);
        await n.start().catch((err: unknown) => w.notes.push(`${n.name} could not be started again: ${String(err)}`));
      }
    }
    w.end = Date.now();
  }
  return windows;
}

export function fmtElapsed(ms: number): string {
  const s = Math.round(ms / 1000);
  return `${String(Math.floor(s / 60)).padStart(2, '0')}:${String(s % 60).padStart(2, '0')}`;
}

/** Whether a TCP connection to host:port is accepted (a cut proxy refuses it). */
function connects(address: string): Promise<boolean> {
  const at = address.lastIndexOf(':');
  return acceptsConnections(Number(address.slice(at + 1)), address.slice(0, at));
}

/** Milliseconds of a `SELECT 1` through `url`, on a connection opened before the clock starts. */
async function timedQuery(url: string): Promise<number> {
  const client = new pg.Client({ connectionString: url, application_name: 'rehearsal-verify' });
  await client.connect();
  try {
    const t0 = performance.now();
    await client.query('SELECT 1');
    return Math.round(performance.now() - t0);
  } finally {
    await client.end();
  }
}

/**
 * How many shard loops (pending pollShard activities of running shard pollers) each worker
 * process runs now, by pid: the SDK's worker identity is `pid@host`. Empty when Temporal cannot
 * say (the fault then takes the first scrape worker).
 */
async function shardLoopsByPid(address: string): Promise<Map<number, number>> {
  const counts = new Map<number, number>();
  const connection = await Connection.connect({ address, connectTimeout: 5_000 }).catch(() => null);
  if (!connection) return counts;
  try {
    const client = new Client({ connection, namespace: 'default' });
    for await (const wf of client.workflow.list({ query: `WorkflowType = 'shardPoller' AND ExecutionStatus = 'Running'` })) {
      const d = await client.workflow.getHandle(wf.workflowId).describe();
      for (const a of d.raw.pendingActivities ?? []) {
        const pid = Number(String(a.lastWorkerIdentity ?? '').split('@')[0]);
        if (Number.isInteger(pid) && pid > 0) counts.set(pid, (counts.get(pid) ?? 0) + 1);
      }
    }
  } catch {
    // Temporal could not list them: no preference.
  } finally {
    await connection.close();
  }
  return counts;
}
