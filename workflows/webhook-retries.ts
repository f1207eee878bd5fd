// webhookRetries: the deliveries of one webhook that wait, durably, for as long as any does.
// A delivery's first attempt is the dispatcher's (src/webhooks/dispatcher.ts); one it cannot
// complete (a retry on the schedule, src/webhooks/retry-schedule.ts, or an endpoint with no free
// slot) waits in the database, dispatched and pending with its next_attempt_at, and the
// dispatcher signals this workflow (signal-with-start, one run per webhook) when it falls due.
// Each round is an activity that attempts the deliveries as they fall due, for as long as one
// falls due within a minute (up to 5 minutes; src/webhooks/due-retries.ts), and says when the
// next does; the wait is a durable timer that a signal for an earlier one cuts short. The run
// ends when nothing waits; the next hand-over starts another. A crash during a send re-runs the
// round: at-least-once, under the same webhook-id.
import { condition, continueAsNew, defineSignal, proxyActivities, setHandler, workflowInfo } from '@temporalio/workflow';
import type { WebhookActivities } from '../activities/webhooks.ts';

export interface WebhookRetriesInput {
  webhookId: number;
  /** When the first round is due (ms since the epoch); now when absent. */
  dueAt?: number;
  /**
   * History events after which the run continues as new (default HISTORY_LIMIT). An endpoint
   * that stays down keeps one run going for days, a few events per round; the state is all in
   * the database, so a new run loses nothing.
   */
  historyLimit?: number;
}

/** A retry of this webhook falls due at the given time (ms since the epoch). */
export const retryDueSignal = defineSignal<[dueAt: number]>('retryDue');

/** Far under Temporal's own warning at 10,240 events. */
export const HISTORY_LIMIT = 2_000;

export function webhookRetriesId(webhookId: number): string {
  return `webhook-retries-${webhookId}`;
}

const { attemptDueWebhookRetries } = proxyActivities<WebhookActivities>({
  // A round takes new deliveries for up to 5 minutes (ROUND_MAX_MS, src/webhooks/due-retries.ts),
  // then its last sends finish (10 s each at most) and are recorded.
  startToCloseTimeout: '7 minutes',
  // The round heartbeats every second (the SDK sends one about every 12 s): a worker that dies
  // mid-round has it run again after this, not after the 7 minutes above. Longer than a send, so
  // a busy worker's heartbeats are never late; a retry that comes 15 s later than due is on time.
  heartbeatTimeout: '15 seconds',
  // Only the activity's own failures (the database unreachable, a crash) are retried here; an
  // endpoint's failures are outcomes, paced by the schedule.
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
});

export async function webhookRetries(input: WebhookRetriesInput): Promise<void> {
  let dueAt = input.dueAt ?? Date.now();
  let sooner = false;
  setHandler(retryDueSignal, (at) => {
    if (at < dueAt) {
      dueAt = at;
      sooner = true;
    }
  });
  for (;;) {
    while (dueAt > Date.now()) {
      sooner = false;
      await condition(() => sooner, dueAt - Date.now());
    }
    // A signal during the round (a new failure) counts from here on.
    dueAt = Infinity;
    const { nextDueAt } = await attemptDueWebhookRetries(input.webhookId);
    if (nextDueAt !== null) dueAt = Math.min(dueAt, nextDueAt);
    if (dueAt === Infinity) return;
    const info = workflowInfo();
    if (info.historyLength >= (input.historyLimit ?? HISTORY_LIMIT) || info.continueAsNewSuggested) {
      await continueAsNew<typeof webhookRetries>({ webhookId: input.webhookId, dueAt, historyLimit: input.historyLimit });
    }
  }
}
