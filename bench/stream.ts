// `npm run bench:stream`: side by side in one run, our stream node (uWebSockets.js) against a
// plain `ws` server doing the same fan-out from the same source, with the same accounts-to-
// connections layout, load from several client processes (bench/stream/client.ts, raw-TCP
// WebSocket readers far cheaper than the servers), the server pinned to core 0 and the clients
// to core 1 so the server saturates, not them.
//
// Runs: saturation (delivered messages/s, latency, CPU of each side, memory per connection);
// a fixed rate both servers sustain (latency without queueing); our node end to end from a
// PostgreSQL insert into the notifications log to the client; and our node with 5% of its
// clients not reading (the others' p99, slow-consumer closes, server memory over time).
//
// Env: BENCH_CONNECTIONS (12000), BENCH_ACCOUNTS (100), BENCH_CLIENTS (3 processes),
// BENCH_DURATION (10 s per run), BENCH_ROWS_PER_TICK (100,1000: saturation levels, rows published
// per event-loop turn), BENCH_RATE (rows/s of the fixed-rate
// runs; default half the ws server's saturation), BENCH_E2E_RATE (500 rows/s),
// BENCH_STALL_CONNECTIONS (400), BENCH_STALL_DURATION (40 s), BENCH_STALL_RATE (rows/s; default a
// quarter of our saturation, at most 80,000 deliveries/s), BENCH_PIN (1: taskset pinning);
// BENCH_SERVERS (ws,uws), BENCH_E2E (1), BENCH_STALL (1) to run parts only; BENCH_DEBUG=1 shows
// the servers' warnings, BENCH_PROF=1 writes a CPU profile of our node to /tmp/prof.
// Open files: each server holds BENCH_CONNECTIONS sockets; run as root the script raises every
// child's limit itself (prlimit), otherwise raise it first (`ulimit -n 65536`).
import { execFileSync, fork, type ChildProcess } from 'node:child_process';
import os from 'node:os';
import { createAccount, createKey } from '../src/accounts/operations.ts';
import { createDb } from '../db/connection.ts';
import { createScratchDatabase } from '../db/scratch.ts';
import { appendToLog } from '../src/notifications/log.ts';
import { STREAM_PATH } from '../src/stream/protocol.ts';
import type { ClientReport, ConnectCommand } from './stream/client.ts';
import { Histogram, coreTimes, coreUse, cpuSeconds, nowMs, rssMiB } from './stream/measure.ts';
import type { ServerCommand, ServerStats } from './stream/server-ipc.ts';
import { connectVerdict, fanOutVerdict, type StreamVerdict } from './stream/verdicts.ts';

const env = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const CONNECTIONS = env('BENCH_CONNECTIONS', 12_000);
const ACCOUNTS = env('BENCH_ACCOUNTS', 100);
const CLIENTS = env('BENCH_CLIENTS', 3);
const DURATION = env('BENCH_DURATION', 10);
const ROWS_PER_TICK = (process.env.BENCH_ROWS_PER_TICK ?? '100,1000').split(',').filter(Boolean).map(Number);
const E2E_RATE = env('BENCH_E2E_RATE', 500);
const STALL_CONNECTIONS = env('BENCH_STALL_CONNECTIONS', 400);
const STALL_DURATION = env('BENCH_STALL_DURATION', 40);
const SERVERS = (process.env.BENCH_SERVERS ?? 'ws,uws').split(',');
const E2E = env('BENCH_E2E', 1) === 1;
const STALL = env('BENCH_STALL', 1) === 1;
const PIN = env('BENCH_PIN', 1) === 1 && os.cpus().length >= 2;
const WARMUP_S = 2;

const log = (msg: string) => process.stderr.write(`[bench:stream ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A child process with request/answer over IPC. */
class Proc {
  readonly child: ChildProcess;
  private waiting = new Map<string, { resolve: (m: Record<string, unknown>) => void; reject: (e: Error) => void }[]>();

  constructor(script: string, childEnv: Record<string, string>, core: number | null) {
    this.child = fork(script, [], {
      execArgv: ['--import', 'tsx', '--expose-gc', ...(process.env.BENCH_PROF && script.includes('server-uws') ? ['--cpu-prof', '--cpu-prof-dir=/tmp/prof'] : [])],
      env: { ...process.env, ...childEnv },
      stdio: ['ignore', process.env.BENCH_DEBUG ? 'inherit' : 'ignore', 'inherit', 'ipc'],
    });
    this.child.on('message', (m: Record<string, unknown>) => this.waiting.get(String(m.type))?.shift()?.resolve(m));
    this.child.once('exit', (code) => {
      for (const [type, list] of this.waiting) for (const w of list.splice(0)) w.reject(new Error(`${script} exited (${code}) while waiting for ${type}`));
    });
    const pid = this.child.pid!;
    if (PIN && core !== null) execFileSync('taskset', ['-a', '-pc', String(core), String(pid)], { stdio: 'ignore' });
    if (process.getuid?.() === 0) {
      try {
        execFileSync('prlimit', ['--pid', String(pid), `--nofile=${CONNECTIONS + 10_000}:${CONNECTIONS + 10_000}`], { stdio: 'ignore' });
      } catch {
        // prlimit missing: the inherited limit applies.
      }
    }
  }

  get pid(): number {
    return this.child.pid!;
  }

  next<T>(type: string): Promise<T> {
    return new Promise((resolve, reject) => {
      const list = this.waiting.get(type) ?? [];
      list.push({ resolve: (m) => resolve(m as T), reject });
      this.waiting.set(type, list);
    });
  }

  send(m: unknown): void {
    this.child.send(m as never);
  }

  async ask<T>(m: unknown, type: string): Promise<T> {
    const answer = this.next<T>(type);
    this.send(m);
    return answer;
  }
}

interface Server {
  name: string;
  proc: Proc;
  port: number;
}

async function startServer(name: 'ours (uWS)' | 'ws', childEnv: Record<string, string>): Promise<Server> {
  const script = name === 'ws' ? 'bench/stream/server-ws.ts' : 'bench/stream/server-uws.ts';
  const proc = new Proc(script, childEnv, 0);
  const { port } = await proc.next<{ port: number }>('ready');
  await sleep(500);
  return { name, proc, port };
}

async function stopServer(s: Server): Promise<void> {
  const exited = new Promise((r) => s.proc.child.once('exit', r));
  s.proc.send({ cmd: 'stop' } satisfies ServerCommand);
  await Promise.race([exited, sleep(5_000)]);
  s.proc.child.kill('SIGKILL');
}

async function startClients(
  server: Server,
  targets: ConnectCommand['targets'],
  stallFraction = 0,
): Promise<{ procs: Proc[]; ok: number; failed: number; ms: number }> {
  const procs = Array.from({ length: CLIENTS }, () => new Proc('bench/stream/client.ts', {}, 1));
  await Promise.all(procs.map((p) => p.next('ready')));
  const results = await Promise.all(
    procs.map((p, i) =>
      p.ask<{ ok: number; failed: number; ms: number }>(
        {
          cmd: 'connect',
          port: server.port,
          targets: targets.filter((_, j) => j % CLIENTS === i),
          stallFraction,
          concurrency: 100,
        } satisfies ConnectCommand,
        'connected',
      ),
    ),
  );
  return {
    procs,
    ok: results.reduce((a, r) => a + r.ok, 0),
    failed: results.reduce((a, r) => a + r.failed, 0),
    ms: Math.max(...results.map((r) => r.ms)),
  };
}

async function stopClients(procs: Proc[]): Promise<void> {
  await Promise.all(
    procs.map(async (p) => {
      const exited = new Promise((r) => p.child.once('exit', r));
      p.send({ cmd: 'close' });
      await Promise.race([exited, sleep(3_000)]);
      p.child.kill('SIGKILL');
    }),
  );
}

interface Window {
  deliveredPerSec: number;
  p50: number;
  p99: number;
  serverCpu: number;
  clientCpu: number;
  cores: { busy: number; soft: number }[];
  closes: number;
  stats: ServerStats;
}

/** Resets the clients' counters, waits `seconds`, and reads everything back. */
async function measure(server: Server, clients: Proc[], seconds: number, sampleEvery: number, onSecond?: (s: number) => void): Promise<Window> {
  for (const c of clients) c.send({ cmd: 'reset', sampleEvery });
  const cores0 = coreTimes();
  const s0 = cpuSeconds(server.proc.pid);
  const c0 = clients.map((c) => cpuSeconds(c.pid));
  const t0 = performance.now();
  for (let s = 1; s <= seconds; s++) {
    await sleep(1_000);
    onSecond?.(s);
  }
  const reports = await Promise.all(clients.map((c) => c.ask<ClientReport>({ cmd: 'report' }, 'report')));
  const elapsed = (performance.now() - t0) / 1000;
  const cores = coreUse(cores0, coreTimes());
  const hist = new Histogram();
  for (const r of reports) hist.add(r.counts);
  const stats = await server.proc.ask<ServerStats>({ cmd: 'stats' } satisfies ServerCommand, 'stats');
  return {
    deliveredPerSec: Math.round(reports.reduce((a, r) => a + r.frames, 0) / elapsed),
    p50: hist.quantileMs(0.5),
    p99: hist.quantileMs(0.99),
    serverCpu: Math.round(((cpuSeconds(server.proc.pid) - s0) / elapsed) * 100),
    clientCpu: Math.round((clients.reduce((a, c, i) => a + cpuSeconds(c.pid) - c0[i]!, 0) / elapsed) * 100),
    cores,
    closes: reports.reduce((a, r) => a + r.closes, 0),
    stats,
  };
}

/** Waits until the clients stop receiving (what the last run left queued has been delivered). */
async function quiesce(clients: Proc[]): Promise<void> {
  let last = -1;
  for (let i = 0; i < 100; i++) {
    await sleep(300);
    const reports = await Promise.all(clients.map((c) => c.ask<ClientReport>({ cmd: 'report' }, 'report')));
    const frames = reports.reduce((a, r) => a + r.frames, 0);
    if (frames === last) return;
    last = frames;
  }
}

async function run(server: Server, phase: ServerCommand, seconds: number, clients: Proc[], sampleEvery = 16): Promise<Window> {
  server.proc.send(phase);
  await sleep(WARMUP_S * 1000);
  const w = await measure(server, clients, seconds, sampleEvery);
  server.proc.send({ cmd: 'stop-source' } satisfies ServerCommand);
  await quiesce(clients);
  return w;
}

/** "100% (softirq 30%) / 95% (12%)": each core busy, and the kernel's network share of it. */
const coreText = (w: Window) => w.cores.map((c) => `${c.busy}% (softirq ${c.soft}%)`).join(' / ');
const bestOf = (r: { sat: Window[] }) => Math.max(...r.sat.map((w) => w.deliveredPerSec));
const ms = (v: number) => (Number.isNaN(v) ? '-' : v < 10 ? v.toFixed(2) : v.toFixed(1));
const n = (v: number) => v.toLocaleString('en-US');

async function main(): Promise<void> {
  log(`${n(CONNECTIONS)} connections over ${ACCOUNTS} accounts, ${CLIENTS} client processes, ${DURATION} s runs; pinning ${PIN ? 'server to core 0, clients to core 1' : 'off'}`);
  log('creating a scratch database and accounts...');
  const scratch = await createScratchDatabase('tm_bench_stream');
  const db = createDb({ connectionString: scratch.url, poolMax: 4 });
  try {
    const accounts: { id: number; key: string }[] = [];
    for (let i = 0; i < ACCOUNTS; i++) {
      const { account_id } = await createAccount(db, { plan: 'enterprise', name: `bench-stream-${i}` });
      const { key } = await createKey(db, { accountId: account_id, rateLimitPerMinute: 10_000_000 });
      accounts.push({ id: account_id, key });
    }
    const accountList = accounts.map((a) => a.id).join(',');
    // Each account holds CONNECTIONS / ACCOUNTS connections on one key: caps set to let them all in.
    const caps = String(Math.ceil(CONNECTIONS / ACCOUNTS));
    const serverEnv = {
      DATABASE_URL: scratch.url,
      BENCH_ACCOUNTS: accountList,
      LOG_LEVEL: process.env.BENCH_DEBUG ? 'warn' : 'error',
      STREAM_MAX_CONNECTIONS_PER_KEY: caps,
      STREAM_MAX_CONNECTIONS_PER_ACCOUNT: caps,
    };
    const targetsFor = (name: string, count: number) =>
      Array.from({ length: count }, (_, i) => {
        const a = accounts[i % ACCOUNTS]!;
        return name === 'ws' ? { path: `${STREAM_PATH}?account=${a.id}`, headers: [] } : { path: STREAM_PATH, headers: [`apikey: ${a.key}`] };
      });
    const perAccount = CONNECTIONS / ACCOUNTS;

    const results: Record<string, { sat: Window[]; fixed?: Window; rssPerConnKiB: number; connectMs: number; connected: number; failed: number }> = {};
    let rate = env('BENCH_RATE', 0);
    for (const name of (['ws', 'ours (uWS)'] as const).filter((x) => SERVERS.includes(x === 'ws' ? 'ws' : 'uws'))) {
      log(`${name}: starting the server`);
      const server = await startServer(name, serverEnv);
      await server.proc.ask({ cmd: 'gc' } satisfies ServerCommand, 'gc-done');
      const rss0 = rssMiB(server.proc.pid);
      log(`${name}: opening ${n(CONNECTIONS)} connections`);
      const clients = await startClients(server, targetsFor(name, CONNECTIONS));
      log(`${name}: ${n(clients.ok)} connected (${clients.failed} failed) in ${n(clients.ms)} ms`);
      await sleep(1_000);
      await server.proc.ask({ cmd: 'gc' } satisfies ServerCommand, 'gc-done');
      const rssPerConnKiB = ((rssMiB(server.proc.pid) - rss0) * 1024) / Math.max(1, clients.ok);
      const sat: Window[] = [];
      for (const rowsPerTick of ROWS_PER_TICK) {
        log(`${name}: saturation, ${n(rowsPerTick)} rows per loop turn (${n(rowsPerTick * perAccount)} deliveries), ${DURATION} s`);
        const w = await run(server, { cmd: 'saturate', rowsPerTick }, DURATION, clients.procs);
        log(`${name}: ${n(w.deliveredPerSec)} messages/s, p99 ${ms(w.p99)} ms, server CPU ${w.serverCpu}%, clients ${w.clientCpu}%, cores ${coreText(w)}, ${n(w.stats.connections)} connections open, ${w.stats.slowCloses} slow-consumer closes`);
        sat.push(w);
      }
      const best = Math.max(...sat.map((w) => w.deliveredPerSec));
      if (!rate) rate = Math.max(1, Math.round((best * 0.5) / perAccount));
      log(`${name}: fixed rate ${n(rate)} rows/s (${n(Math.round(rate * perAccount))} deliveries/s), ${DURATION} s`);
      const fixed = await run(server, { cmd: 'rate', rowsPerSecond: rate }, DURATION, clients.procs);
      log(`${name}: p50 ${ms(fixed.p50)} ms, p99 ${ms(fixed.p99)} ms, server CPU ${fixed.serverCpu}%`);
      results[name] = { sat, fixed, rssPerConnKiB, connectMs: clients.ms, connected: clients.ok, failed: clients.failed };

      let e2e: Histogram | null = null;
      if (name !== 'ws' && E2E) {
        log(`${name}: end to end, ${E2E_RATE} rows/s inserted into the notifications log, ${DURATION} s`);
        for (const c of clients.procs) c.send({ cmd: 'reset', sampleEvery: 1 });
        const stopAt = Date.now() + DURATION * 1000;
        let i = 0;
        const commits = new Histogram();
        while (Date.now() < stopAt) {
          const batch = Math.max(1, Math.round(E2E_RATE / 50));
          const started = performance.now();
          const t = nowMs();
          await db.transaction((trx) =>
            appendToLog(
              trx,
              Array.from({ length: batch }, () => ({
                accountId: accounts[i++ % ACCOUNTS]!.id,
                itemId: 17,
                kind: 'notification' as const,
                dedupeKey: null,
                payload: { item_id: 17, change_type: 'stock_increase', platform: 'pf_03', event: 'e', region: 'us', t },
              })),
            ),
          );
          commits.record((nowMs() - t) * 1000);
          await sleep(Math.max(0, 20 - (performance.now() - started)));
        }
        await sleep(500);
        const reports = await Promise.all(clients.procs.map((c) => c.ask<ClientReport>({ cmd: 'report' }, 'report')));
        e2e = new Histogram();
        for (const r of reports) e2e.add(r.counts);
        log(`${name}: end to end p50 ${ms(e2e.quantileMs(0.5))} ms, p99 ${ms(e2e.quantileMs(0.99))} ms over ${n(e2e.total)} deliveries; the insert's commit alone p50 ${ms(commits.quantileMs(0.5))} ms, p99 ${ms(commits.quantileMs(0.99))} ms`);
        (results[name] as Record<string, unknown>).commits = commits;
        (results[name] as Record<string, unknown>).e2e = e2e;
      }
      await stopClients(clients.procs);
      await stopServer(server);
    }

    // Slow consumers: our node, fewer connections and ~1.3 KB messages so that each stalled
    // connection is sent ~250 KB/s and fills its buffers (the kernel's socket buffers first, a
    // few MB on loopback) within the run; first without stalled clients, then with 5% stalled.
    // A quarter of our saturation rate, at most 80,000 deliveries/s.
    const stallRun: { label: string; w: Window; rss: number[] }[] = [];
    const stallPerAccount = STALL_CONNECTIONS / ACCOUNTS;
    const uwsSat = results['ours (uWS)'] ? bestOf(results['ours (uWS)']) : 300_000;
    // BENCH_STALL_RATE (rows/s) overrides it, e.g. to compare p99s below saturation.
    const stallRate = env('BENCH_STALL_RATE', Math.max(1, Math.round(Math.min(uwsSat / 4, 80_000) / stallPerAccount)));
    for (const fraction of STALL ? [0, 0.05] : []) {
      const label = fraction ? '5% of clients stop reading' : 'all clients reading';
      log(`slow consumers: ${label}: ${n(STALL_CONNECTIONS)} connections, ${n(stallRate)} rows/s of ~1.3 KB (${n(stallRate * stallPerAccount)} deliveries/s), ${STALL_DURATION} s`);
      const server = await startServer('ours (uWS)', { ...serverEnv, BENCH_PAD: '1000' });
      const clients = await startClients(server, targetsFor('ours', STALL_CONNECTIONS), fraction);
      server.proc.send({ cmd: 'rate', rowsPerSecond: stallRate } satisfies ServerCommand);
      const rss: number[] = [];
      const w = await measure(server, clients.procs, STALL_DURATION, 4, (s) => {
        if (s % 3 === 0) rss.push(Math.round(rssMiB(server.proc.pid)));
      });
      log(`slow consumers: ${label}: others' p99 ${ms(w.p99)} ms, ${n(w.deliveredPerSec)} messages/s, ${w.stats.slowCloses} slow-consumer closes, RSS ${rss.join(' → ')} MiB`);
      stallRun.push({ label, w, rss });
      await stopClients(clients.procs);
      await stopServer(server);
    }

    // The report.
    const ours = results['ours (uWS)'];
    const ws = results.ws;
    const lines: string[] = [];
    const verdicts: StreamVerdict[] = [];
    lines.push(`\nbench:stream, ${new Date().toISOString().slice(0, 16)} UTC, ${os.cpus().length} cores; ${n(CONNECTIONS)} connections over ${ACCOUNTS} accounts (${perAccount} per account), ${CLIENTS} client processes${PIN ? ' on core 1, server on core 0' : ''}`);
    lines.push('\nSaturation (each row fans out to every connection of its account):\n');
    lines.push('| server | rows per loop turn | delivered messages/s | p50 / p99 ms | server process CPU | clients CPU | core 0 / core 1 busy | memory per connection | connect time |');
    lines.push('|---|---:|---:|---:|---:|---:|---:|---:|---:|');
    for (const [name, r] of Object.entries(results)) {
      for (const [i, w] of r.sat.entries()) {
        lines.push(`| ${name} | ${n(ROWS_PER_TICK[i]!)} | ${n(w.deliveredPerSec)} | ${ms(w.p50)} / ${ms(w.p99)} | ${w.serverCpu}% | ${w.clientCpu}% | ${coreText(w)} | ${r.rssPerConnKiB.toFixed(1)} KiB | ${n(r.connectMs)} ms |`);
      }
    }
    if (ours && ws) {
      for (const [i, k] of ROWS_PER_TICK.entries()) {
        lines.push(`\nAt ${n(k)} rows per loop turn: ours / ws = ${(ours.sat[i]!.deliveredPerSec / ws.sat[i]!.deliveredPerSec).toFixed(2)}x`);
      }
      verdicts.push(fanOutVerdict(bestOf(ours), bestOf(ws)));
      verdicts.push(connectVerdict({ ms: ours.connectMs, failed: ours.failed }, { ms: ws.connectMs, failed: ws.failed }));
      lines.push(...verdicts.map((v) => v.line));
    }
    lines.push(`\nFixed rate, ${n(rate)} rows/s = ${n(Math.round(rate * perAccount))} deliveries/s (half the ws server's saturation):\n`);
    lines.push('| server | delivered messages/s | p50 ms | p99 ms | server CPU |');
    lines.push('|---|---:|---:|---:|---:|');
    for (const [name, r] of Object.entries(results)) lines.push(`| ${name} | ${n(r.fixed!.deliveredPerSec)} | ${ms(r.fixed!.p50)} | ${ms(r.fixed!.p99)} | ${r.fixed!.serverCpu}% |`);
    const e2e = (ours as Record<string, unknown> | undefined)?.e2e as Histogram | undefined;
    if (e2e) lines.push(`\nEnd to end (PostgreSQL insert into the notifications log → LISTEN/NOTIFY → follower → client), ${E2E_RATE} rows/s: p50 ${ms(e2e.quantileMs(0.5))} ms, p99 ${ms(e2e.quantileMs(0.99))} ms, max bucket ${ms(e2e.quantileMs(1))} ms (${n(e2e.total)} deliveries)`);
    if (stallRun.length) lines.push(`\nSlow consumers (ours, ${n(STALL_CONNECTIONS)} connections, ~1.3 KB messages, ${n(stallRate)} rows/s, max_buffered_bytes 1 MiB):\n`);
    if (stallRun.length) lines.push("| run | others' delivered messages/s | others' p50 / p99 ms | slow-consumer closes | server RSS every 3 s (MiB) |", '|---|---:|---:|---:|---|');
    for (const s of stallRun) lines.push(`| ${s.label} | ${n(s.w.deliveredPerSec)} | ${ms(s.w.p50)} / ${ms(s.w.p99)} | ${s.w.stats.slowCloses} | ${s.rss.join(' → ')} |`);
    console.log(lines.join('\n'));
    // Non-zero when a verdict failed (a run with only one of the servers has none).
    if (verdicts.some((v) => !v.pass)) process.exitCode = 1;
  } finally {
    await db.destroy();
    await scratch.drop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
