// The Temporal server as production runs it (issue 39): go.temporal.io/server built here, its
// schema applied to two new databases on the run's PostgreSQL by deploy/temporal/setup-schema.sh,
// its four services one process each, the namespace registered by deploy/temporal/create-namespace.sh.
// On it: the service's custom search attributes fit SQL visibility and find a workflow; a workflow
// outlives the SIGKILL of each service in turn and of all of them (its state is in PostgreSQL).
import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.ts';
import { resolveTemporalCli } from '../../temporal/binary.ts';
import { createTemporalDatabases, type TemporalDatabases } from '../../temporal/databases.ts';
import { isRunning } from '../../temporal/processes.ts';
import { reserveTemporalPorts, setUpTemporalSchema, TemporalCluster, TEMPORAL_SERVICES } from '../../temporal/production-server.ts';
import { ensureSearchAttributes, monitorSearchAttributes } from '../../temporal/search-attributes.ts';
import { resolveTemporalServer } from '../../temporal/server-binary.ts';
import { databaseUrl, eventually } from '../support/harness.ts';

const tag = randomBytes(4).toString('hex');
let databases: TemporalDatabases;
let cluster: TemporalCluster;
let connection: Connection;
let client: Client;
let dir: string;

beforeAll(async () => {
  const binaries = await resolveTemporalServer();
  if (!binaries) throw new Error('no Temporal server binary on this machine: run `npm run temporal:install`');
  const cli = await resolveTemporalCli({ cliPath: process.env.TEMPORAL_CLI_PATH || undefined });
  if (!cli) throw new Error('no Temporal CLI binary on this machine: run `npm run temporal:install`');
  databases = await createTemporalDatabases(databaseUrl(), `tm_${tag}`);
  const url = new URL(databaseUrl());
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'tm-temporal-server-'));
  cluster = new TemporalCluster({
    binaries,
    cli,
    db: { host: url.hostname, port: Number(url.port || 5432), user: decodeURIComponent(url.username), password: decodeURIComponent(url.password), ...databases.names },
    ports: await reserveTemporalPorts(),
    layout: 'per-service',
    namespace: 'default',
    logFile: path.join(dir, 'temporal.log'),
  });
  await cluster.start();
  connection = await Connection.connect({ address: cluster.address });
  client = new Client({ connection, namespace: 'default' });
}, 15 * 60_000);

afterAll(async () => {
  await connection?.close();
  await cluster?.stop();
  await databases?.drop();
  if (dir) await fs.rm(dir, { recursive: true, force: true });
});

describe('go.temporal.io/server on PostgreSQL, one process per service', () => {
  it('runs each service in its own process, and applying the schema again changes nothing', async () => {
    const pids = TEMPORAL_SERVICES.map((s) => cluster.pid(s));
    expect(pids.every((p) => p !== null && isRunning(p))).toBe(true);
    expect(new Set(pids).size).toBe(4);
    const again = await setUpTemporalSchema((await resolveTemporalServer())!, {
      ...databases.names,
      host: new URL(databaseUrl()).hostname,
      port: Number(new URL(databaseUrl()).port || 5432),
      user: decodeURIComponent(new URL(databaseUrl()).username),
      password: decodeURIComponent(new URL(databaseUrl()).password),
    });
    expect(again).toContain('temporal schema: up to date');
  });

  it("registers the service's search attributes in SQL visibility, and finds a workflow by them", async () => {
    await ensureSearchAttributes(connection, 'default', createLogger('silent'));
    const workflowId = `production-server-${tag}`;
    // No worker polls this queue: the workflow stays open, which is all visibility needs.
    await client.workflow.start('watchlistMonitor', {
      taskQueue: `production-server-test-${tag}`,
      workflowId,
      args: [],
      typedSearchAttributes: monitorSearchAttributes({ accountId: 7, itemId: 4242, platform: 'pf_03', eventKey: 'pf_03:us:e1' }),
    });
    const found = await eventually(async () => {
      const ids: string[] = [];
      for await (const w of client.workflow.list({ query: `ItemId = 4242 AND Platform = 'pf_03'` })) ids.push(w.workflowId);
      return ids.length ? ids : undefined;
    }, 30_000, 250);
    expect(found).toEqual([workflowId]);
  });

  it('keeps a workflow through the SIGKILL of each service in turn, and of them all', async () => {
    const workflowId = `production-server-kill-${tag}`;
    await client.workflow.start('watchlistMonitor', { taskQueue: `production-server-test-${tag}`, workflowId, args: [] });
    for (const service of TEMPORAL_SERVICES) {
      const before = cluster.pid(service)!;
      await cluster.kill(service);
      expect(isRunning(before)).toBe(false);
      await cluster.startProcess(service);
      expect(cluster.pid(service)).not.toBe(before);
      const status = await eventually(async () => (await client.workflow.getHandle(workflowId).describe().catch(() => undefined))?.status.name, 60_000, 250);
      expect(status, `after the ${service} service's restart`).toBe('RUNNING');
    }
    for (const service of [...TEMPORAL_SERVICES].reverse()) await cluster.kill(service);
    await cluster.startProcesses();
    const status = await eventually(async () => (await client.workflow.getHandle(workflowId).describe().catch(() => undefined))?.status.name, 60_000, 250);
    expect(status).toBe('RUNNING');
  });
});
