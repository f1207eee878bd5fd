// Runs an on-demand scrape as a Temporal `scrapeEvent` workflow and waits for its answer.
// Identical concurrent requests (same platform, event key and region) share one run: the
// workflow id is derived from them and a start that meets a running one joins it
// (USE_EXISTING); a finished run's id may be reused (ALLOW_DUPLICATE), so the next request
// scrapes afresh. The run's input is kept in its memo so ops can retry a failed run.
import { type Client, WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure, TimeoutFailure } from '@temporalio/common';
import proto from '@temporalio/proto';
import type { Db } from '../../../db/connection.ts';
import { CachedProbe, NotReadyError, PROBE_DEADLINE_MS } from '../../gateway/readiness.ts';
import { targetKey, type EventRef } from '../../platform/event-ref.ts';
import { BROWSER_PLATFORMS, type PlatformKey } from '../../platform/registry.ts';
import { BrowserReports } from '../../scrapers/browser-reports.ts';
import type { ScrapeResponse } from '../../scrapers/response.ts';
import type { ScrapeEventInput, scrapeEvent } from '../../../workflows/scrape-event.ts';
import type { PlatformDegraded } from './schema.ts';

/** `blocked`: the platform refused us (429 or 403); the run did not retry it, so as not to hammer it. */
export type ScrapeRunFailureKind = 'not_found' | 'timeout' | 'blocked' | 'failed' | 'unavailable';

export class ScrapeRunError extends Error {
  constructor(
    readonly kind: ScrapeRunFailureKind,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'ScrapeRunError';
  }
}

export interface ScrapeRunner {
  run(ref: EventRef): Promise<ScrapeResponse>;
  /**
   * Resolves when a scrape could run now (GET /events/ping); rejects with NotReadyError (503)
   * otherwise. `onFailure` receives the underlying error, for the log.
   */
  assertReady(onFailure?: (err: unknown) => void): Promise<void>;
  /**
   * Platforms whose scrapes cannot run in full on the workers behind this runner, with why
   * (GET /events/platforms). `onFailure` receives an error that left the answer unknown.
   */
  degradedPlatforms(onFailure?: (err: unknown) => void): Promise<Partial<Record<PlatformKey, PlatformDegraded>>>;
}

const { TaskQueueType } = proto.temporal.api.enums.v1;

/**
 * A poller the server saw this recently counts as a live scrape worker. An idle worker long-polls
 * (up to about a minute per poll on the server's default settings), and the server keeps a
 * stopped worker in its poller list for minutes, so this bounds how long a dead worker still
 * counts as alive.
 */
export const POLLER_FRESH_MS = 90_000;

export const SCRAPE_WORKFLOW_TYPE = 'scrapeEvent';

/** One id per (platform, event key, region): every spelling of one event shares it. */
export function scrapeWorkflowId(ref: EventRef): string {
  return `scrape:${targetKey(ref)}`;
}

/** How long starting (or joining) a run may take before the backend counts as unreachable. */
const START_DEADLINE_MS = 5_000;

/** Extra time the client waits past the limit for the run's own timeout to arrive. */
const RESULT_GRACE_MS = 3_000;

export class TemporalScrapeRunner implements ScrapeRunner {
  private readonly browsers: BrowserReports | null;

  /** `browserReports`: the database the scrape workers report their browser to (none: never degraded). */
  constructor(
    private readonly client: Client,
    private readonly options: { taskQueue: string; timeoutMs: number; browserReports?: Db },
  ) {
    this.browsers = options.browserReports ? new BrowserReports(options.browserReports, options.taskQueue) : null;
  }

  private localWorkers: Client | null = null;

  private readonly readiness = new CachedProbe(() => this.checkWorkers(), { unavailableMessage: 'the scrape backend cannot be reached' });

  assertReady(onFailure?: (err: unknown) => void): Promise<void> {
    return this.readiness.assertReady(onFailure);
  }

  /** The browser platforms, while a worker on the task queue reports its Chromium missing. */
  async degradedPlatforms(onFailure?: (err: unknown) => void): Promise<Partial<Record<PlatformKey, PlatformDegraded>>> {
    if (!(await this.browsers?.missing(onFailure))) return {};
    return Object.fromEntries(BROWSER_PLATFORMS.map((p) => [p, 'browser_missing' as const]));
  }

  /**
   * Temporal answers, and a worker polls the scrape task queue for workflow tasks (a scrape runs
   * as a workflow with a local activity: its workflow pollers are the scrape workers). One bounded
   * DescribeTaskQueue call.
   */
  private async checkWorkers(): Promise<void> {
    const { client } = this;
    // Shorter than the probe's own deadline, so the RPC (and the SDK's retries) settle before the
    // answer goes out.
    const res = await client.withDeadline(Date.now() + PROBE_DEADLINE_MS - 500, () =>
      client.workflowService.describeTaskQueue({
        namespace: client.options.namespace,
        taskQueue: { name: this.options.taskQueue },
        taskQueueType: TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
      }),
    );
    const since = Date.now() - POLLER_FRESH_MS;
    const live = (res.pollers ?? []).some((p) => {
      const seconds = p.lastAccessTime?.seconds;
      return seconds != null && Number(seconds) * 1000 + (p.lastAccessTime?.nanos ?? 0) / 1e6 >= since;
    });
    if (!live) throw new NotReadyError('no scrape worker is running');
  }

  /**
   * From now on, start new runs eagerly on this process's own workers (`client` from
   * clientOnWorkers, temporal/worker.ts, with a worker on the runner's task queue): the server
   * hands the run's first workflow task back in the start response instead of dispatching it
   * through the task queue, which saves a round trip and the server's matching work (bench:scrape
   * figures in docs/performance.md). A worker with no free slot makes the server fall back to the queue.
   * Null goes back to the queue: call it before those workers stop.
   */
  startOnLocalWorkers(client: Client | null): void {
    this.localWorkers = client;
  }

  async run(ref: EventRef): Promise<ScrapeResponse> {
    const { taskQueue, timeoutMs } = this.options;
    // No deadlineMs yet: counted from the request's start, a run that waited for a worker still
    // starting timed out in a fresh-clone test run; the limit counts from the run's first task.
    const input: ScrapeEventInput = { ref, timeoutMs };
    let handle;
    try {
      // Bounded: the SDK retries an unreachable frontend for a long time, and the client
      // should get its 502 in seconds, not hold a connection open.
      const starter = this.localWorkers ?? this.client;
      handle = await starter.withDeadline(Date.now() + START_DEADLINE_MS, () =>
        starter.workflow.start<typeof scrapeEvent>(SCRAPE_WORKFLOW_TYPE, {
        taskQueue,
        workflowId: scrapeWorkflowId(ref),
        args: [input],
        workflowIdConflictPolicy: 'USE_EXISTING',
        workflowIdReusePolicy: 'ALLOW_DUPLICATE',
        requestEagerStart: starter === this.localWorkers,
        // A run nobody picks up (no worker) still ends, and its waiting client gets a 408.
        workflowExecutionTimeout: timeoutMs + RESULT_GRACE_MS,
        memo: { input },
      }),
      );
    } catch (err) {
      throw new ScrapeRunError('unavailable', 'the scrape backend could not be reached', { cause: err });
    }

    // The result is awaited through the process's own client even for an eager start: the local
    // workers' connection closes when they stop, and a run in flight must still be answered.
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new ScrapeRunError('timeout', `${ref.platform} took longer than ${Math.round(timeoutMs / 1000)} seconds`)),
        timeoutMs + RESULT_GRACE_MS,
      );
    });
    try {
      const result = await Promise.race([this.client.workflow.getHandle<typeof scrapeEvent>(handle.workflowId, handle.firstExecutionRunId).result(), deadline]);
      // A shared run answers with the first caller's spelling of the id; each caller gets its own.
      return { ...result, event_id: ref.eventId };
    } catch (err) {
      throw toRunError(err, ref, timeoutMs);
    } finally {
      clearTimeout(timer);
    }
  }
}

/**
 * What a failed run failed with: the failure type its workflow threw (`not_found`, `malformed`,
 * `timeout`, …; `timeout` too when the run itself timed out), its message (the customer's text,
 * src/scrapers/failure-detail.ts) and, for operators only, the scrape failure's own message
 * (`reason`: it may name URLs and proxies by label), or null when the run kept none.
 */
export function runFailure(err: WorkflowFailedError): { type: string; message: string; reason: string | null } {
  const cause = err.cause;
  if (cause instanceof TimeoutFailure) return { type: 'timeout', message: 'the run timed out', reason: null };
  if (cause instanceof ApplicationFailure) return { type: cause.type ?? 'internal', message: cause.message, reason: cause.cause?.message ?? null };
  return { type: 'internal', message: cause?.message ?? err.message, reason: null };
}

function toRunError(err: unknown, ref: EventRef, timeoutMs: number): ScrapeRunError {
  if (err instanceof ScrapeRunError) return err;
  if (err instanceof WorkflowFailedError) {
    const { type, message } = runFailure(err);
    if (type === 'not_found') return new ScrapeRunError('not_found', message);
    if (type === 'timeout' || type === 'attempt_timeout') {
      return new ScrapeRunError('timeout', `${ref.platform} took longer than ${Math.round(timeoutMs / 1000)} seconds`);
    }
    // The message is the customer's text already (failure-detail.ts): it says who refused and
    // how long to wait; what the platform answered, and through which exit, is the log's.
    if (type === 'blocked') return new ScrapeRunError('blocked', message);
    if (type === 'internal') return new ScrapeRunError('failed', 'unexpected error during the scrape', { cause: err });
    // The worker's message names its CHROMIUM_PATH and the fix: the operator's, in the worker's log.
    if (type === 'browser_missing') {
      return new ScrapeRunError('failed', `${ref.platform} cannot be scraped right now: the Chromium browser it needs is missing on the server.`, { cause: err });
    }
    return new ScrapeRunError('failed', message);
  }
  return new ScrapeRunError('unavailable', 'the scrape backend could not be reached', { cause: err });
}
