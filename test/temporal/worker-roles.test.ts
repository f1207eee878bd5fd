// WORKER_ROLE (issue 25: the browser holds no secrets). The production entry point
// (`npm run worker`) in child processes: a scrape worker serves the scrapes and monitors queues
// only, never reads or makes the webhook key, refuses to start with a secret, and launches
// Chromium with none of its settings; a delivery worker serves the webhooks queue only and never
// loads the scrapers or Chromium. What the scrape worker's own database role lets it do:
// scrape-worker-role.test.ts.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import proto from '@temporalio/proto';
import type { Client } from '@temporalio/client';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createActivities } from '../../activities/index.ts';
import { createDb, type Db } from '../../db/connection.ts';
import { createScratchDatabase, type ScratchDatabase } from '../../db/scratch.ts';
import { createLogger } from '../../src/logger.ts';
import { reservePort } from '../../src/runtime/ports.ts';
import { connectTemporal } from '../../temporal/client.ts';
import { refusal, roleQueues } from '../../temporal/worker-roles.ts';
import { databaseUrl, eventually, PROJECT_ROOT, runTs, TEST_WEBHOOK_KEY, testConfig } from '../support/harness.ts';
import { TEST_NAMESPACE, temporalAddress, uniqueTaskQueue } from '../support/temporal.ts';

const { TaskQueueType } = proto.temporal.api.enums.v1;
const CHROMIUM = '/usr/bin/chromium';

describe('worker roles', () => {
  const config = testConfig({ BILLING_PROVIDER: 'stripe', STRIPE_SECRET_KEY: 'sk_test_x', STRIPE_WEBHOOK_SECRET: 'whsec_x' });
  it('scrape: the scrapes and monitors queues; deliver: webhooks and billing; all: every one', () => {
    expect(roleQueues('scrape', config)).toEqual(['scrapes', 'monitors']);
    expect(roleQueues('deliver', config)).toEqual(['webhooks', 'billing']);
    expect(roleQueues('deliver', { ...config, BILLING_PROVIDER: 'local' })).toEqual(['webhooks']);
    expect(roleQueues('all', config)).toEqual(['scrapes', 'monitors', 'webhooks', 'billing']);
  });

  it('a scrape worker refuses every secret the browser could inherit; the others take theirs', () => {
    expect(refusal('scrape', {})).toBeNull();
    expect(refusal('scrape', { WEBHOOK_SECRET_KEY: 'k' })).toMatch(/^WORKER_ROLE=scrape runs the browser and must not hold WEBHOOK_SECRET_KEY: remove it/);
    expect(refusal('scrape', { STRIPE_SECRET_KEY: 'sk', STRIPE_WEBHOOK_SECRET: 'wh', WEBHOOK_SECRET_KEY: '' })).toContain('STRIPE_SECRET_KEY, STRIPE_WEBHOOK_SECRET: remove them');
    expect(refusal('deliver', { WEBHOOK_SECRET_KEY: 'k', STRIPE_SECRET_KEY: 'sk' })).toBeNull();
    expect(refusal('all', { WEBHOOK_SECRET_KEY: 'k' })).toBeNull();
  });
});

/** Every process below `pid` (from /proc), with its command name. */
function descendants(pid: number): { pid: number; comm: string }[] {
  const children = new Map<number, { pid: number; comm: string }[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // pid (comm) state ppid …; comm may hold spaces and parentheses: split at the last ')'.
      const close = stat.lastIndexOf(')');
      const comm = stat.slice(stat.indexOf('(') + 1, close);
      const ppid = Number(stat.slice(close + 2).split(' ')[1]);
      children.set(ppid, [...(children.get(ppid) ?? []), { pid: Number(entry), comm }]);
    } catch {
      // gone meanwhile
    }
  }
  const out: { pid: number; comm: string }[] = [];
  const walk = (p: number) => {
    for (const c of children.get(p) ?? []) {
      out.push(c);
      walk(c.pid);
    }
  };
  walk(pid);
  return out;
}

function environ(pid: number): Record<string, string> {
  const raw = readFileSync(`/proc/${pid}/environ`, 'utf8');
  return Object.fromEntries(raw.split('\0').filter(Boolean).map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]));
}

interface RunningWorker {
  child: ChildProcess;
  ready: Record<string, unknown>;
  output(): string;
  /** SIGTERM, then what it printed. */
  stop(): Promise<string>;
}

describe('npm run worker by role', { timeout: 120_000 }, () => {
  let scratch: ScratchDatabase;
  let temporal: { client: Client; close(): Promise<void> };
  const running: ChildProcess[] = [];
  const dirs: string[] = [];
  beforeAll(async () => {
    scratch = await createScratchDatabase('tm_roles_worker', databaseUrl());
    temporal = await connectTemporal({ address: temporalAddress(), namespace: TEST_NAMESPACE });
  }, 60_000);
  afterAll(async () => {
    for (const c of running) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    await temporal?.close();
    await scratch?.drop();
    for (const d of dirs) await fs.rm(d, { recursive: true, force: true });
  });

  const queues = () => ({
    SCRAPE_TASK_QUEUE: uniqueTaskQueue('scrapes'),
    MONITOR_TASK_QUEUE: uniqueTaskQueue('monitors'),
    WEBHOOK_TASK_QUEUE: uniqueTaskQueue('webhooks'),
    BILLING_TASK_QUEUE: uniqueTaskQueue('billing'),
  });

  async function baseEnv(q: Record<string, string>): Promise<NodeJS.ProcessEnv> {
    const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'tm-role-'));
    dirs.push(dataDir);
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      ...q,
      DATABASE_URL: scratch.url,
      TEMPORAL_ADDRESS: temporalAddress(),
      TEMPORAL_NAMESPACE: TEST_NAMESPACE,
      DATA_DIR: dataDir,
      HOST: '127.0.0.1',
      METRICS_PORT: String(await reservePort()),
      LOG_LEVEL: 'info',
      BROWSER_PAGES: '1',
      // Stands for any setting of the worker's: none may reach the browser.
      TM_CANARY_SETTING: 'must-not-reach-the-browser',
    };
    for (const name of ['WEBHOOK_SECRET_KEY', 'STRIPE_SECRET_KEY', 'STRIPE_WEBHOOK_SECRET', 'BILLING_PROVIDER', 'WORKER_ROLE']) delete env[name];
    return env;
  }

  /** `npm run worker` with the module report preloaded; resolves at its `worker ready` line. */
  async function startWorker(env: NodeJS.ProcessEnv): Promise<RunningWorker> {
    const child = spawn(process.execPath, ['--import', 'tsx', '--import', './test/fixtures/report-loaded-modules.mjs', 'temporal/worker-main.ts'], {
      cwd: PROJECT_ROOT,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    running.push(child);
    let output = '';
    const exited = new Promise<void>((r) => child.once('exit', () => r()));
    const ready = await new Promise<Record<string, unknown>>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`worker not ready within 90 s:\n${output}`)), 90_000);
      const onData = (b: Buffer) => {
        output += b.toString();
        const line = output.split('\n').find((l) => l.includes('"msg":"worker ready"'));
        if (line) {
          clearTimeout(timer);
          resolve(JSON.parse(line));
        }
      };
      child.stdout!.on('data', onData);
      child.stderr!.on('data', onData);
      child.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`worker exited (${code}) before it was ready:\n${output}`));
      });
    });
    return {
      child,
      ready,
      output: () => output,
      stop: async () => {
        child.kill('SIGTERM');
        await exited;
        return output;
      },
    };
  }

  async function activityPollers(taskQueue: string): Promise<number> {
    const res = await temporal.client.workflowService.describeTaskQueue({
      namespace: TEST_NAMESPACE,
      taskQueue: { name: taskQueue },
      taskQueueType: TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY,
    });
    return res.pollers?.length ?? 0;
  }

  const loadedScraperModules = (output: string) => {
    const line = output.split('\n').find((l) => l.startsWith('LOADED_SCRAPER_MODULES '));
    if (!line) throw new Error(`no module report in:\n${output.slice(-2_000)}`);
    return (JSON.parse(line.slice('LOADED_SCRAPER_MODULES '.length)) as { count: number }).count;
  };

  it('a scrape worker given a webhook or Stripe key refuses to start, naming it', async () => {
    const env = { ...(await baseEnv(queues())), WORKER_ROLE: 'scrape', WEBHOOK_SECRET_KEY: TEST_WEBHOOK_KEY };
    const r = await runTs('temporal/worker-main.ts', [], env);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('WORKER_ROLE=scrape runs the browser and must not hold WEBHOOK_SECRET_KEY');
    expect(r.stdout + r.stderr).not.toContain('worker ready');
  });

  it('a scrape worker serves only the scrapes and monitors queues, never reads or makes the webhook key, and its Chromium gets none of its settings', async () => {
    const q = queues();
    const env: NodeJS.ProcessEnv = { ...(await baseEnv(q)), WORKER_ROLE: 'scrape' };
    const worker = await startWorker(env);
    expect(worker.ready).toMatchObject({ role: 'scrape', task_queues: [q.SCRAPE_TASK_QUEUE, q.MONITOR_TASK_QUEUE] });
    expect(await eventually(async () => ((await activityPollers(q.SCRAPE_TASK_QUEUE)) > 0 ? true : undefined))).toBe(true);
    expect(await activityPollers(q.WEBHOOK_TASK_QUEUE)).toBe(0);
    expect(await activityPollers(q.BILLING_TASK_QUEUE)).toBe(0);
    // `npm run worker` of the other roles makes the key in DATA_DIR when the environment has none.
    expect(existsSync(path.join(env.DATA_DIR!, 'webhook-secret.key'))).toBe(false);
    expect(environ(worker.child.pid!).WEBHOOK_SECRET_KEY).toBeUndefined();
    if (existsSync(CHROMIUM)) {
      // Launched in the background at start (the warm browser).
      const browsers = await eventually(async () => {
        const found = descendants(worker.child.pid!).filter((p) => /chrom/i.test(p.comm));
        return found.length ? found : undefined;
      });
      let read = 0;
      for (const b of browsers) {
        let seen: Record<string, string>;
        try {
          seen = environ(b.pid);
        } catch {
          continue; // a helper process that has ended
        }
        // Chromium's helper processes write their titles over their environment's memory: only
        // the browser process's own is still an environment.
        if (seen.PATH) read++;
        for (const name of ['DATABASE_URL', 'TEMPORAL_ADDRESS', 'TM_CANARY_SETTING', 'WORKER_ROLE', 'DATA_DIR']) expect(seen[name], `${name} in ${b.comm}'s environment`).toBeUndefined();
      }
      expect(read).toBeGreaterThan(0);
    }
    const output = await worker.stop();
    expect(output).not.toMatch(/permission denied/i);
    // The positive control for the delivery worker's check below.
    expect(loadedScraperModules(output)).toBeGreaterThan(0);
  });

  it('a delivery worker serves only the webhooks queue (and billing with Stripe), and never loads the scrapers or Chromium', async () => {
    const q = queues();
    const env: NodeJS.ProcessEnv = { ...(await baseEnv(q)), WORKER_ROLE: 'deliver', WEBHOOK_SECRET_KEY: TEST_WEBHOOK_KEY };
    const worker = await startWorker(env);
    expect(worker.ready).toMatchObject({ role: 'deliver', task_queues: [q.WEBHOOK_TASK_QUEUE] });
    expect(await eventually(async () => ((await activityPollers(q.WEBHOOK_TASK_QUEUE)) > 0 ? true : undefined))).toBe(true);
    expect(await activityPollers(q.SCRAPE_TASK_QUEUE)).toBe(0);
    expect(await activityPollers(q.MONITOR_TASK_QUEUE)).toBe(0);
    // Long enough for a warm browser to have been launched, were there one.
    await new Promise((r) => setTimeout(r, 2_000));
    expect(descendants(worker.child.pid!).filter((p) => /chrom/i.test(p.comm))).toEqual([]);
    const output = await worker.stop();
    expect(loadedScraperModules(output)).toBe(0);
  });
});

describe('the scrape side’s activities', { timeout: 60_000 }, () => {
  let scratch: ScratchDatabase;
  let db: Db;
  beforeAll(async () => {
    scratch = await createScratchDatabase('tm_roles_acts', databaseUrl());
    db = createDb({ connectionString: scratch.url, poolMax: 4 });
  }, 60_000);
  afterAll(async () => {
    await db?.destroy();
    await scratch?.drop();
  });

  it('register no webhook or billing activity, even with the keys in their configuration', async () => {
    const config = testConfig({ DATABASE_URL: scratch.url, BILLING_PROVIDER: 'stripe', STRIPE_SECRET_KEY: 'sk_test_x', STRIPE_WEBHOOK_SECRET: 'whsec_x' });
    const deps = { config, log: createLogger('silent'), db, connectionString: scratch.url, registry: new Registry() };
    const names = async (role: 'all' | 'scrape') => {
      const built = await createActivities({ ...deps, registry: new Registry(), role });
      await built.close();
      return { names: Object.keys(built.activities), dispatcher: built.webhookAttempts !== undefined };
    };
    const delivery = ['attemptDueWebhookRetries', 'reconcileStripeSubscriptions', 'syncStripeMeter'];
    const all = await names('all');
    expect(all.names).toEqual(expect.arrayContaining(delivery));
    expect(all.dispatcher).toBe(true);
    const scrape = await names('scrape');
    for (const n of delivery) expect(scrape.names).not.toContain(n);
    expect(scrape.names).toEqual(expect.arrayContaining(['pollShard', 'inspectMonitor']));
    expect(scrape.dispatcher).toBe(false);
  });
});
