// Once per run: one fresh, migrated database (dropped afterwards), one Temporal dev server, and one
// stripe-mock (stripe-mock-server.ts; stateless, so shared freely). Tests isolate by creating
// their own accounts and their own task queues.
//
// The Temporal server is `npm start`'s own launcher (temporal/dev-server.ts) on the per-machine CLI
// binary (temporal/binary.ts, built with a SQLite driver whose cancellation no longer interrupts
// other requests' statements: issue 22, docs/testing.md), with its SQLite database in a WAL file in
// a directory of the run's, never in memory: an in-memory database lives only as long as its one
// connection, and a file outlives any. The server's warnings and errors go to a log file in that
// directory, summarised at the end of the run.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import type { TestProject } from 'vitest/node';
import { createScratchDatabase } from '../../db/scratch.ts';
import { resolveTemporalCli } from '../../temporal/binary.ts';
import { startDevServer } from '../../temporal/dev-server.ts';
import { WORKFLOWS_PATH, bundleWorkflows } from '../../temporal/worker.ts';
import { createLogger } from '../../src/logger.ts';
import { resolveStripeMock, startStripeMock } from './stripe-mock-server.ts';
import { summariseServerLog } from './temporal-server-log.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    databaseUrl: string;
    /** host:port of the run's Temporal frontend; '' when it could not start (see temporalError). */
    temporalAddress: string;
    temporalError: string;
    /** http://127.0.0.1:PORT of the run's stripe-mock; '' when it could not start (see stripeMockError). */
    stripeMockUrl: string;
    stripeMockError: string;
    /** The service's workflow code (temporal/runtime.ts WORKFLOWS_PATH), bundled once for the run; '' if that failed. */
    workflowBundleFile: string;
  }
}

/**
 * A Temporal server that cannot start fails the Temporal tests (with this reason), not the whole
 * run: the database tests do not need it.
 */
async function startTemporal(): Promise<{ address: string; error: string; teardown(): Promise<void> }> {
  const started = performance.now();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'tm-test-temporal-'));
  const logFile = path.join(dataDir, 'server.log');
  const destination = pino.destination({ dest: logFile, sync: true });
  const removeDir = () => fs.promises.rm(dataDir, { recursive: true, force: true });
  try {
    const binary = await resolveTemporalCli({
      cliPath: process.env.TEMPORAL_CLI_PATH || undefined,
      onProgress: (msg) => process.stderr.write(`temporal: ${msg}\n`),
    });
    const server = await startDevServer({
      binary,
      dataDir,
      port: 0, // reserved by the launcher, which starts again on another if one is lost
      uiPort: null,
      namespace: 'default',
      log: createLogger('warn', destination),
      // Every test file's workers long-poll this one server. Past the namespace's concurrent poll
      // limit (1,200 by default) a new worker's polls are refused and it backs off: a worker
      // spawned late in a full run then took no task for 20 to 90 s. Production servers are
      // sized apart.
      dynamicConfig: { 'frontend.namespaceCount': 20_000 },
      readyTimeoutMs: 60_000,
    });
    process.stderr.write(`temporal: test server at ${server.address} in ${Math.round(performance.now() - started)} ms (${path.join(dataDir, 'temporal')})\n`);
    return {
      address: server.address,
      error: '',
      teardown: async () => {
        await server.stop();
        destination.flushSync();
        process.stderr.write(summariseServerLog(fs.readFileSync(logFile, 'utf8')));
        await removeDir();
      },
    };
  } catch (err) {
    await removeDir();
    const error = `the run's Temporal server did not start: ${err instanceof Error ? err.message : String(err)}`;
    process.stderr.write(`temporal: ${error}\n`);
    return { address: '', error, teardown: async () => {} };
  }
}

/** Likewise: without stripe-mock only the Stripe tests fail, with this reason. */
async function startStripe(): Promise<{ url: string; error: string; teardown(): Promise<void> }> {
  const started = performance.now();
  try {
    const binary = await resolveStripeMock({ onProgress: (msg) => process.stderr.write(`stripe-mock: ${msg}\n`) });
    if (!binary) throw new Error('no stripe-mock binary (install Go, or set STRIPE_MOCK_PATH; see docs/testing.md "Stripe tests")');
    const server = await startStripeMock(binary);
    process.stderr.write(`stripe-mock: at ${server.url} in ${Math.round(performance.now() - started)} ms\n`);
    return { url: server.url, error: '', teardown: server.stop };
  } catch (err) {
    const error = `the run's stripe-mock did not start: ${err instanceof Error ? err.message : String(err)}`;
    process.stderr.write(`stripe-mock: ${error}\n`);
    return { url: '', error, teardown: async () => {} };
  }
}

/**
 * Bundling the workflow code costs about 2 s of CPU, and every file that runs a worker did it
 * again (test/support/temporal.ts cachedBundle). On failure each file bundles for itself, and
 * reports the error where it is used.
 */
async function bundleOnce(): Promise<{ file: string; teardown(): Promise<void> }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tm-test-bundle-'));
  const removeDir = () => fs.promises.rm(dir, { recursive: true, force: true });
  try {
    const bundle = await bundleWorkflows(WORKFLOWS_PATH, createLogger('warn'));
    const file = path.join(dir, 'workflows.js');
    await fs.promises.writeFile(file, bundle.code);
    return { file, teardown: removeDir };
  } catch (err) {
    process.stderr.write(`workflows: not bundled once for the run (${err instanceof Error ? err.message : String(err)}); each file bundles its own\n`);
    await removeDir();
    return { file: '', teardown: async () => {} };
  }
}

export default async function setup(project: TestProject) {
  const [database, temporal, stripe, bundle] = await Promise.allSettled([createScratchDatabase('tm_test'), startTemporal(), startStripe(), bundleOnce()]);
  // startTemporal and startStripe report, never reject
  if (temporal.status === 'rejected') throw temporal.reason;
  if (stripe.status === 'rejected') throw stripe.reason;
  if (bundle.status === 'rejected') throw bundle.reason;
  if (database.status === 'rejected') {
    await Promise.all([temporal.value.teardown(), stripe.value.teardown(), bundle.value.teardown()]);
    throw database.reason;
  }
  const scratch = database.value;
  project.provide('databaseUrl', scratch.url);
  project.provide('temporalAddress', temporal.value.address);
  project.provide('temporalError', temporal.value.error);
  project.provide('stripeMockUrl', stripe.value.url);
  project.provide('stripeMockError', stripe.value.error);
  project.provide('workflowBundleFile', bundle.value.file);
  return async () => {
    await Promise.all([scratch.drop(), temporal.value.teardown(), stripe.value.teardown(), bundle.value.teardown()]);
  };
}
