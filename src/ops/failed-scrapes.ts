// Failed scrape runs, read from Temporal's visibility store, and their retry: the logic behind
// `npm run ops -- scrapes:failed|scrapes:retry`. A workflow id whose newest run succeeded is no
// longer failed, so only ids whose latest run failed or timed out are listed.
import { type Client, WorkflowFailedError } from '@temporalio/client';
import type { ScrapeEventInput } from '../../workflows/scrape-event.ts';
import { runFailure, SCRAPE_WORKFLOW_TYPE, ScrapeRunError, TemporalScrapeRunner } from '../apis/live-availability/scrape-runs.ts';

export interface FailedScrape {
  workflow_id: string;
  run_id: string;
  status: string;
  failure_type: string | null;
  /** What the client was told. */
  message: string | null;
  /** What happened, for operators: the scrape failure's own message (proxies named by label). */
  reason: string | null;
  platform: string | null;
  event_id: string | null;
  region: string | null;
  started_at: string | null;
  closed_at: string | null;
}

export interface RetryOutcome {
  workflow_id: string;
  previous_run_id: string;
  outcome: 'succeeded' | 'failed';
  detail: string | null;
  total_stock?: number | null;
}

/** `30m`, `1h`, `2d`, `45s`. */
export function parseSince(text: string, now = new Date()): Date {
  const m = /^(\d{1,6})(s|m|h|d)$/.exec(text);
  if (!m) throw new Error(`--since must look like 30m, 1h or 2d, not '${text}'`);
  const seconds = Number(m[1]) * { s: 1, m: 60, h: 3_600, d: 86_400 }[m[2] as 's' | 'm' | 'h' | 'd'];
  return new Date(now.getTime() - seconds * 1000);
}

async function failureOf(client: Client, workflowId: string, runId: string): Promise<{ type: string | null; message: string | null; reason: string | null }> {
  try {
    await client.workflow.getHandle(workflowId, runId).result();
    return { type: null, message: null, reason: null };
  } catch (err) {
    if (err instanceof WorkflowFailedError) return runFailure(err);
    return { type: null, message: (err as Error).message, reason: null };
  }
}

export async function listFailedScrapes(client: Client, since: Date): Promise<FailedScrape[]> {
  const query =
    `WorkflowType = '${SCRAPE_WORKFLOW_TYPE}' AND (ExecutionStatus = 'Failed' OR ExecutionStatus = 'TimedOut') ` +
    `AND CloseTime > '${since.toISOString()}'`;
  const failed: FailedScrape[] = [];
  const seen = new Set<string>();
  for await (const run of client.workflow.list({ query })) {
    if (seen.has(run.workflowId)) continue;
    seen.add(run.workflowId);
    const latest = await client.workflow.getHandle(run.workflowId).describe();
    if (latest.runId !== run.runId && latest.status.name !== 'FAILED' && latest.status.name !== 'TIMED_OUT') continue;
    const input = (latest.memo?.input ?? null) as ScrapeEventInput | null;
    const failure = await failureOf(client, latest.workflowId, latest.runId);
    failed.push({
      workflow_id: latest.workflowId,
      run_id: latest.runId,
      status: latest.status.name,
      failure_type: failure.type,
      message: failure.message,
      reason: failure.reason,
      platform: input?.ref.platform ?? null,
      event_id: input?.ref.eventId ?? null,
      region: input?.ref.region ?? null,
      started_at: latest.startTime.toISOString(),
      closed_at: latest.closeTime?.toISOString() ?? null,
    });
  }
  return failed;
}

/**
 * Runs the failed run's input again as a new run of the same workflow id, on the failed run's
 * task queue, and waits for it.
 */
export async function retryScrape(client: Client, workflowId: string): Promise<RetryOutcome> {
  const previous = await client.workflow.getHandle(workflowId).describe();
  const taskQueue = previous.taskQueue;
  const input = previous.memo?.input as ScrapeEventInput | undefined;
  if (!input?.ref) throw new Error(`${workflowId} is not a scrape run (no input in its memo)`);
  const runner = new TemporalScrapeRunner(client, { taskQueue, timeoutMs: input.timeoutMs });
  try {
    const result = await runner.run(input.ref);
    return { workflow_id: workflowId, previous_run_id: previous.runId, outcome: 'succeeded', detail: null, total_stock: result.total_stock };
  } catch (err) {
    if (err instanceof ScrapeRunError && err.kind !== 'unavailable') {
      return { workflow_id: workflowId, previous_run_id: previous.runId, outcome: 'failed', detail: `${err.kind}: ${err.message}` };
    }
    throw err;
  }
}
