// Runs the Temporal workers of one process: one Worker per task queue, all sharing one
// NativeConnection and one webpack bundle of the workflow code (bundling costs seconds of CPU,
// so it is paid once, not per queue), stopped together and gracefully.
import { fileURLToPath } from 'node:url';
import { Client } from '@temporalio/client';
import type { NativeConnectionOptions } from '@temporalio/worker';
import { NativeConnection, Worker, bundleWorkflowCode, type WorkflowBundle } from '@temporalio/worker';
import { temporalDataConverter } from './payload-codec.ts';
import { PinoSdkLogger, installSdkLogging, type Log } from './sdk-logging.ts';

/** The service's workflow code, which every worker of the service bundles. */
export const WORKFLOWS_PATH = fileURLToPath(new URL('../workflows/index.ts', import.meta.url));

export interface QueueWorkerOptions {
  taskQueue: string;
  /** The workflows module (e.g. workflows/index.ts); queues naming the same path share a bundle. */
  workflowsPath: string;
  activities: object;
  maxConcurrentActivityTaskExecutions?: number;
  /** A bundle made earlier (bundleWorkflows) for this workflowsPath, e.g. cached across tests. */
  workflowBundle?: WorkflowBundle;
}

export interface StartWorkersOptions {
  connection: NativeConnectionOptions;
  namespace: string;
  queues: QueueWorkerOptions[];
  log: Log;
  /** How long activities in flight get to finish on stop before they are cancelled. */
  shutdownGraceMs?: number;
  /**
   * Called on stop once the workers take no more tasks: long-running activities that need not
   * use the grace end here (the shard polls hand their schedule back).
   */
  onShutdown?: () => void;
}

export interface Workers {
  /**
   * The workers' own connection. A Client built on it (clientOnWorkers) can start workflows
   * eagerly: the server hands the first workflow task back in the start response, to these
   * workers, instead of through a task-queue poll.
   */
  connection: NativeConnection;
  stop(): Promise<void>;
}

/** A client over the workers' connection, for starting workflows eagerly on them. */
export function clientOnWorkers(workers: Workers, namespace: string): Client {
  return new Client({ connection: workers.connection, namespace, dataConverter: temporalDataConverter });
}

/** Webpack-bundles the workflow code. TypeScript `.ts` import specifiers resolve as written. */
export async function bundleWorkflows(workflowsPath: string, log: Log): Promise<WorkflowBundle> {
  const started = performance.now();
  // webpack's own chatter is INFO; PinoSdkLogger keeps only its warnings and errors.
  const bundle = await bundleWorkflowCode({ workflowsPath, logger: new PinoSdkLogger(log) });
  log.info({ workflowsPath, ms: Math.round(performance.now() - started), bytes: bundle.code.length }, 'workflow code bundled');
  return bundle;
}

export async function startWorkers(opts: StartWorkersOptions): Promise<Workers> {
  installSdkLogging(opts.log);
  const bundles = new Map<string, Promise<WorkflowBundle>>();
  for (const q of opts.queues) {
    if (!bundles.has(q.workflowsPath)) {
      bundles.set(q.workflowsPath, q.workflowBundle ? Promise.resolve(q.workflowBundle) : bundleWorkflows(q.workflowsPath, opts.log));
    }
  }
  // Bundling and connecting do not depend on each other.
  const connecting = NativeConnection.connect(opts.connection);
  let connection: NativeConnection;
  let ready: WorkflowBundle[];
  try {
    [connection, ...ready] = await Promise.all([connecting, ...bundles.values()]);
  } catch (err) {
    await connecting.then((c) => c.close()).catch(() => {});
    throw err;
  }
  const bundleFor = new Map([...bundles.keys()].map((k, i) => [k, ready[i]!]));

  const workers: Worker[] = [];
  try {
    for (const q of opts.queues) {
      workers.push(
        await Worker.create({
          connection,
          namespace: opts.namespace,
          taskQueue: q.taskQueue,
          workflowBundle: bundleFor.get(q.workflowsPath)!,
          activities: q.activities,
          maxConcurrentActivityTaskExecutions: q.maxConcurrentActivityTaskExecutions,
          shutdownGraceTime: opts.shutdownGraceMs ?? 5_000,
          dataConverter: temporalDataConverter,
        }),
      );
    }
  } catch (err) {
    // Workers that were created but never run only need their connection closed.
    await connection.close().catch(() => {});
    throw err;
  }

  const runs = workers.map((w, i) =>
    w.run().catch((err: unknown) => {
      // run() only rejects on a fatal worker error; the queue then has no worker in this process.
      opts.log.error({ err, taskQueue: opts.queues[i]!.taskQueue }, 'Temporal worker failed');
    }),
  );
  opts.log.info({ taskQueues: opts.queues.map((q) => q.taskQueue), namespace: opts.namespace }, 'Temporal workers running');

  let stopped: Promise<void> | null = null;
  return {
    connection,
    stop: () =>
      (stopped ??= (async () => {
        for (const w of workers) {
          if (w.getState() === 'RUNNING') w.shutdown();
        }
        opts.onShutdown?.();
        // With the server gone (Ctrl-C reaches the dev server too), the SDK keeps retrying a
        // workflow task completion and shutdown never ends: give up after the grace period
        // plus a margin. Nothing is lost: unfinished tasks run again from history.
        const limitMs = (opts.shutdownGraceMs ?? 5_000) + 3_000;
        let timer: NodeJS.Timeout | undefined;
        const finished = await Promise.race([
          Promise.all(runs).then(() => true),
          new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), limitMs))),
        ]);
        clearTimeout(timer);
        if (!finished) {
          opts.log.warn({ ms: limitMs }, 'Temporal workers did not stop in time (server unreachable?); leaving them');
          return;
        }
        await connection.close();
        opts.log.info('Temporal workers stopped');
      })()),
  };
}
