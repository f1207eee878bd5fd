// startWorkers on the run's shared server: one process serving two task queues from one bundle
// of TypeScript workflow code (with `.ts` import specifiers), an activity and a child workflow
// crossing queues end to end, and a graceful stop; plus the tests' own withWorker helper.
import { fileURLToPath } from 'node:url';
import { Writable } from 'node:stream';
import fs from 'node:fs';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { createLogger } from '../../src/logger.ts';
import { connectTemporal, type TemporalClient } from '../../temporal/client.ts';
import { WORKFLOWS_PATH, clientOnWorkers, startWorkers } from '../../temporal/worker.ts';
import { TEST_NAMESPACE, cachedBundle, temporalAddress, uniqueTaskQueue, withWorker } from '../support/temporal.ts';
import type { GreetActivities } from './fixtures/workflows/words.ts';

const WORKFLOWS = fileURLToPath(new URL('./fixtures/workflows/index.ts', import.meta.url));

const activities: GreetActivities = { shout: async (name) => name.toUpperCase() };

let client: TemporalClient | undefined;
afterAll(async () => {
  await client?.close();
});

function capture() {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      for (const l of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(l));
      done();
    },
  });
  return { lines, log: createLogger('info', sink) };
}

describe('startWorkers', () => {
  it('clientOnWorkers starts workflows eagerly on those workers; a plain client cannot ask to', async () => {
    const taskQueue = uniqueTaskQueue('eager');
    const { log } = capture();
    const workers = await startWorkers({
      connection: { address: temporalAddress() },
      namespace: TEST_NAMESPACE,
      queues: [{ taskQueue, workflowsPath: WORKFLOWS, activities, workflowBundle: await cachedBundle(WORKFLOWS) }],
      log,
      shutdownGraceMs: 1_000,
    });
    try {
      const local = clientOnWorkers(workers, TEST_NAMESPACE);
      const handle = await local.workflow.start('greet', { taskQueue, workflowId: uniqueTaskQueue('eager-run'), args: ['ada'], requestEagerStart: true });
      // The server handed the first workflow task back with the start: no task-queue dispatch.
      expect(handle.eagerlyStarted).toBe(true);
      expect(await handle.result()).toBe('hello ADA from ' + taskQueue);
      client ??= await connectTemporal({ address: temporalAddress(), namespace: TEST_NAMESPACE });
      await expect(
        client.client.workflow.start('greet', { taskQueue, workflowId: uniqueTaskQueue('not-eager'), args: ['x'], requestEagerStart: true }),
      ).rejects.toThrow(/NativeConnection/);
    } finally {
      await workers.stop();
    }
  });

  it('serves two task queues from one bundle: activity and child workflow end to end, then stops gracefully', async () => {
    const [scrapes, monitors] = [uniqueTaskQueue('scrapes'), uniqueTaskQueue('monitors')];
    const { lines, log } = capture();
    const workers = await startWorkers({
      connection: { address: temporalAddress() },
      namespace: TEST_NAMESPACE,
      queues: [
        { taskQueue: scrapes, workflowsPath: WORKFLOWS, activities, maxConcurrentActivityTaskExecutions: 4 },
        { taskQueue: monitors, workflowsPath: WORKFLOWS, activities },
      ],
      log,
      shutdownGraceMs: 1_000,
    });
    try {
      client = await connectTemporal({ address: temporalAddress(), namespace: TEST_NAMESPACE });
      const result = await client.client.workflow.execute('greetBoth', {
        taskQueue: scrapes,
        workflowId: uniqueTaskQueue('greet-both'),
        args: ['ada', monitors],
      });
      expect(result).toEqual([`hello ADA from ${scrapes}`, `hello ADA from ${monitors}`]);
    } finally {
      await workers.stop();
    }
    await workers.stop(); // idempotent

    // Bundled once for both queues, and the time it took is on record.
    const bundled = lines.filter((l) => l.msg === 'workflow code bundled');
    expect(bundled).toHaveLength(1);
    expect(bundled[0]).toMatchObject({ workflowsPath: WORKFLOWS, ms: expect.any(Number) });
    expect(lines.map((l) => l.msg)).toEqual(expect.arrayContaining(['Temporal workers running', 'Temporal workers stopped']));
    // After stop, nobody polls: a new workflow on the queue is not picked up.
    const handle = await client.client.workflow.start('greet', { taskQueue: scrapes, workflowId: uniqueTaskQueue('after-stop'), args: ['x'] });
    await new Promise((r) => setTimeout(r, 500));
    expect((await handle.describe()).status.name).toBe('RUNNING');
    await handle.terminate('test done');
  });

  it('a workflows module that does not bundle fails start-up with the bundler error', async () => {
    const missing = fileURLToPath(new URL('./fixtures/workflows/nope.ts', import.meta.url));
    await expect(
      startWorkers({
        connection: { address: temporalAddress() },
        namespace: TEST_NAMESPACE,
        queues: [{ taskQueue: uniqueTaskQueue('bad'), workflowsPath: missing, activities }],
        log: createLogger('silent'),
      }),
    ).rejects.toThrow();
  });
});

describe('withWorker (test helper)', () => {
  it('runs the body with a worker on a fresh queue, reusing the bundle', async () => {
    for (const name of ['grace', 'linus']) {
      const taskQueue = uniqueTaskQueue('with-worker');
      const out = await withWorker({ workflowsPath: WORKFLOWS, activities, taskQueue }, ({ client, taskQueue }) =>
        client.workflow.execute('greet', { taskQueue, workflowId: uniqueTaskQueue('greet'), args: [name] }),
      );
      expect(out).toBe(`hello ${name.toUpperCase()} from ${taskQueue}`);
    }
    expect(cachedBundle(WORKFLOWS)).toBe(cachedBundle(WORKFLOWS));
  });

  it("the service's workflows come from the run's one bundle (global-setup.ts), not bundled again by each file", async () => {
    const file = inject('workflowBundleFile');
    expect(file).not.toBe('');
    const bundle = await cachedBundle(WORKFLOWS_PATH);
    expect(bundle.code).toBe(fs.readFileSync(file, 'utf8'));
    // and it is the service's code: its workflows are registered by name in it
    expect(bundle.code).toContain('watchlistMonitor');
  });
});
