// Temporal helpers for tests: the run's shared server (started once by global-setup.ts), task
// queues no other test uses, and a worker around a test body. Workflow bundles are cached per
// workflows module for the test file, since bundling costs seconds and the code does not change;
// the service's own workflows are bundled once for the whole run, by global-setup.ts.
import fs from 'node:fs/promises';
import { inject } from 'vitest';
import type { Client } from '@temporalio/client';
import type { WorkflowBundle } from '@temporalio/worker';
import { createLogger } from '../../src/logger.ts';
import { connectTemporal } from '../../temporal/client.ts';
import { WORKFLOWS_PATH, bundleWorkflows, startWorkers } from '../../temporal/worker.ts';

export const TEST_NAMESPACE = 'default';

/** Warnings and errors only: a failing worker explains itself, a passing one stays quiet. */
const log = createLogger(process.env.TEST_LOG_LEVEL ?? 'warn').child({ test: 'temporal' });

export function temporalAddress(): string {
  const address = inject('temporalAddress');
  if (!address) throw new Error(inject('temporalError') || 'no Temporal server for this run');
  return address;
}

let queueCounter = 0;
export function uniqueTaskQueue(name: string): string {
  return `${name}-${process.pid}-${++queueCounter}-${Math.random().toString(36).slice(2, 8)}`;
}

const bundles = new Map<string, Promise<WorkflowBundle>>();
export function cachedBundle(workflowsPath: string): Promise<WorkflowBundle> {
  let bundle = bundles.get(workflowsPath);
  if (!bundle) {
    // About 2 s of CPU per bundle: once per run rather than once per file (some 30 files).
    const shared = workflowsPath === WORKFLOWS_PATH ? inject('workflowBundleFile') : '';
    bundle = shared ? fs.readFile(shared, 'utf8').then((code) => ({ code })) : bundleWorkflows(workflowsPath, log);
    bundles.set(workflowsPath, bundle);
    bundle.catch(() => bundles.delete(workflowsPath));
  }
  return bundle;
}

/** Runs `fn` while a worker serves `taskQueue` on the shared server; stops it afterwards. */
export async function withWorker<T>(
  opts: { workflowsPath: string; activities?: object; taskQueue: string },
  fn: (ctx: { client: Client; taskQueue: string }) => Promise<T>,
): Promise<T> {
  const address = temporalAddress();
  const workflowBundle = await cachedBundle(opts.workflowsPath);
  const workers = await startWorkers({
    connection: { address },
    namespace: TEST_NAMESPACE,
    queues: [{ taskQueue: opts.taskQueue, workflowsPath: opts.workflowsPath, activities: opts.activities ?? {}, workflowBundle }],
    log,
    shutdownGraceMs: 1_000,
  });
  try {
    const { client, close } = await connectTemporal({ address, namespace: TEST_NAMESPACE });
    try {
      return await fn({ client, taskQueue: opts.taskQueue });
    } finally {
      await close();
    }
  } finally {
    await workers.stop();
  }
}
