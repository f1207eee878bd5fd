// Phase r of bench:proxies (issue 36): one pf_03 event the platform refuses (the simulator's
// `blocked` behaviour: 403 to every request, no Retry-After) is watched by one account and scraped
// on demand ON_DEMAND times, ON_DEMAND_AT_ONCE at a time (as POST /events/scrape runs them: a
// Temporal scrapeEvent run on the worker), during the soak and before any ban. Before issue 36
// this cooled every proxy in turn and the other targets got no poll for minutes. What is read
// afterwards, from the simulator's request log (the ground truth): the other targets' polls/s
// against their schedule, each proxy's share, and when the refused event itself was asked.
import type { Client } from '@temporalio/client';
import { TemporalScrapeRunner } from '../../src/apis/live-availability/scrape-runs.ts';
import { parseEventRef } from '../../src/platform/event-ref.ts';
import type { Lifecycle } from '../monitors/lifecycle.ts';
import type { PlatformShape } from '../monitors/platform.ts';
import { progress, sleep } from '../monitors/support.ts';
import type { LoggedRequest } from './simulator.ts';

export const ON_DEMAND = 60;
export const ON_DEMAND_AT_ONCE = 3;

export interface RefusedEventRun {
  /** The refused event's simulator key (its requests in the log). */
  key: string;
  /** The window: from the watch to its end (epoch ms). */
  from: number;
  to: number;
  /** On-demand answers by outcome (`served`, or the failure's type), and the slowest (ms). */
  onDemand: Record<string, number>;
  slowestOnDemandMs: number;
}

export interface RefusedEventOptions {
  shape: PlatformShape;
  /** An index past the bench's targets: a fresh event. */
  eventIndex: number;
  simUrl: string;
  gatewayUrl: string;
  accountKey: string;
  client: Client;
  taskQueue: string;
  windowMs: number;
  life: Lifecycle;
}

export async function runRefusedEvent(o: RefusedEventOptions): Promise<RefusedEventRun> {
  const { eventId, key } = o.shape.event(o.eventIndex);
  const res = await fetch(`${o.simUrl}/_sim/${o.shape.platform}/events/${encodeURIComponent(key)}`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ region: o.shape.region, sections: o.shape.sections(o.eventIndex), behaviour: 'blocked', blocked_status: 403, retry_after_s: null }),
  });
  if (res.status !== 200) throw new Error(`simulator PUT of the refused event: ${res.status} ${await res.text()}`);
  const from = Date.now();
  const watch = await fetch(`${o.gatewayUrl}/watchlist`, {
    method: 'POST',
    headers: { apikey: o.accountKey, 'content-type': 'application/json' },
    body: JSON.stringify({ website: o.shape.platform, event: eventId, region: o.shape.region }),
  });
  if (watch.status !== 201) throw new Error(`POST /watchlist of the refused event: ${watch.status} ${await watch.text()}`);
  const parsed = parseEventRef(o.shape.platform, eventId, o.shape.region);
  if (!parsed.ok) throw new Error(parsed.message);
  const runner = new TemporalScrapeRunner(o.client, { taskQueue: o.taskQueue, timeoutMs: 60_000 });
  const onDemand: Record<string, number> = {};
  let slowest = 0;
  progress(`phase r: one ${o.shape.platform} event answering 403 to everything, watched, and scraped on demand ${ON_DEMAND} times, ${ON_DEMAND_AT_ONCE} at a time...`);
  for (let sent = 0; sent < ON_DEMAND; sent += ON_DEMAND_AT_ONCE) {
    o.life.check();
    await Promise.all(
      Array.from({ length: ON_DEMAND_AT_ONCE }, async () => {
        const t0 = performance.now();
        const outcome = await runner.run(parsed.ref).then(
          () => 'served',
          (err: unknown) => (err as { kind?: string }).kind ?? 'error',
        );
        slowest = Math.max(slowest, performance.now() - t0);
        onDemand[outcome] = (onDemand[outcome] ?? 0) + 1;
      }),
    );
  }
  progress(`  on demand: ${JSON.stringify(onDemand)}, slowest ${Math.round(slowest)} ms; the window goes on to ${o.windowMs / 1000} s`);
  while (Date.now() < from + o.windowMs) {
    o.life.check();
    await sleep(Math.min(1_000, from + o.windowMs - Date.now()));
  }
  return { key, from, to: Date.now(), onDemand, slowestOnDemandMs: slowest };
}

export interface RefusedEventFigures {
  run: RefusedEventRun;
  /** The other targets' polls per second in the window, and what their schedule asks. */
  othersRate: number;
  othersExpected: number;
  /** Requests of the other targets per proxy address in the window. */
  perAddress: Map<string, number>;
  /** When the refused event was asked, ms from its first request. */
  asked: number[];
}

export function refusedEventFigures(run: RefusedEventRun, requests: readonly LoggedRequest[], keys: ReadonlySet<string>, addresses: readonly string[], intervalMs: number): RefusedEventFigures {
  const others = requests.filter((r) => keys.has(r.key) && !r.refused);
  const perAddress = new Map(addresses.map((a) => [a, 0]));
  for (const r of others) perAddress.set(r.address, (perAddress.get(r.address) ?? 0) + 1);
  const times = requests.filter((r) => r.key === run.key).map((r) => r.at);
  return {
    run,
    othersRate: others.length / ((run.to - run.from) / 1000),
    othersExpected: (keys.size * 1000) / intervalMs,
    perAddress,
    asked: times.map((t) => t - times[0]!),
  };
}

/**
 * Whether the refused event was asked once per back-off step: the asks of its first second (the
 * first poll, and an on-demand scrape's one more exit) are one step; each later step k lasts at
 * least 0.9 × backoffMs × 2^(k-1) (the schedule's jitter). Null when it was asked too little to tell.
 */
export function oncePerStep(asked: readonly number[], backoffMs: number): { steps: number[]; ok: boolean | null } {
  const steps = asked.filter((t, i) => i === 0 || t - asked[i - 1]! > 500);
  if (steps.length < 2) return { steps, ok: null };
  const burst = asked.filter((t) => t < 500).length;
  let ok = burst <= 3 && asked.length - burst === steps.length - 1;
  for (let k = 1; k < steps.length; k++) if (steps[k]! - steps[k - 1]! < 0.9 * backoffMs * 2 ** (k - 1)) ok = false;
  return { steps, ok };
}
