// One scrape that picks its own exit (an on-demand scrape, or the tracker's), and what its outcome
// tells the pool (issue 36). Polls do not come through here: each poller paces every exit itself,
// hands the scrape the session of the exit whose turn it is, and tells the pool how it went
// (activities/poll-shard.ts).
//
//   - A target whose refusal was charged to it (refusals.ts) is answered from its back-off, with
//     no request: asking again before the platform's wait is over would only be refused again.
//   - A healthy exit is picked in turn. A refusal (or a failed proxy) moves the scrape to one more
//     healthy exit at most, so a refused event costs a platform two requests, not one per exit.
//   - The second refusal is charged as a poll's would be (refusals.ts): to the target, or for the
//     tracker to the exit when it completes the evidence. One that passes on the second exit leaves
//     the target clean; for the tracker, the first exit refused a target that passes elsewhere,
//     evidence against it. An on-demand refusal is never evidence against an exit the monitors
//     use: anyone with a key chooses what to scrape.
// Used by the platform scrapers (../index.ts) and the tracker's marketplace scrapers
// (../marketplaces/index.ts), with proxies or without (a direct exit gives no session).
import { ScrapeFailure } from '../types.ts';
import type { Exit, ExitPool } from './exit-pool.ts';
import type { RefusalSource } from './refusals.ts';
import type { ScrapeSession } from './scrape-session.ts';

/** Exits one scrape tries before it gives up on a refusal: the first, and one more. */
export const MAX_EXITS_PER_SCRAPE = 2;

export interface ExitChoice {
  /** The target's key (targetKey of its EventRef, or the tracked event's): what a refusal is charged to. */
  target: string;
  /** `on-demand`: refusals never count against an exit; `poll`: the tracker's periodic scrapes. */
  source: RefusalSource;
  signal?: AbortSignal;
}

/** The refusal an on-demand scrape met on its first exit, charged only if the next refuses it too. */
interface Refused {
  exit: Exit;
  session: ScrapeSession | undefined;
  failure: ScrapeFailure;
}

function waitSeconds(ms: number): number {
  return Math.max(1, Math.ceil(ms / 1000));
}

/** The answer while the target backs off: the platform refused it lately. */
function backingOff(pool: ExitPool, untilMs: number, now: number): ScrapeFailure {
  const waitMs = untilMs - now;
  return new ScrapeFailure('blocked', `${pool.platform} refused this target lately; it backs off for ${waitSeconds(waitMs)} s more`, {
    retryAfterMs: waitMs,
    detail: `${pool.platform} is refusing our requests for this event for now; try again in ${waitSeconds(waitMs)} s`,
  });
}

function allCooling(pool: ExitPool, now: number): ScrapeFailure {
  const waitMs = Math.max(0, pool.nextHealthyAt(now) - now);
  return new ScrapeFailure('blocked', `every exit of ${pool.platform} (${pool.exits.length}) refused us lately and is cooling down (next in ${waitSeconds(waitMs)} s)`, {
    retryAfterMs: waitMs,
    detail: `${pool.platform} is refusing our requests for now; try again in ${waitSeconds(waitMs)} s`,
  });
}

export async function throughExits<T>(pool: ExitPool, choice: ExitChoice, work: (session: ScrapeSession | undefined) => Promise<T>): Promise<T> {
  const { target, source, signal } = choice;
  const asking = pool.ask(target, Date.now());
  if (asking.waitUntil > 0) throw backingOff(pool, asking.waitUntil, Date.now());
  // The probe of an ended back-off step asks through one exit only: the event was refused before.
  const maxTries = asking.probe ? 1 : MAX_EXITS_PER_SCRAPE;
  let refusedOn = null as Refused | null;
  for (let tries = 1; ; tries++) {
    const now = Date.now();
    const exit = pool.pick(now);
    if (!exit || exit === refusedOn?.exit) {
      if (refusedOn) throw charge(pool, refusedOn, target, source);
      pool.released(target);
      throw allCooling(pool, now);
    }
    const session: ScrapeSession | undefined = pool.proxied ? pool.session(exit, now) : undefined;
    try {
      const value = await work(session);
      // Refused through the first exit, answered through this one: for a poll-like scrape, the
      // first exit refused a target that passes (evidence against it); on demand, nothing.
      if (refusedOn && source === 'poll') pool.passedElsewhere(refusedOn.exit, refusedOn.session ?? null, exit, target, refusedOn.failure);
      else pool.answered(exit, target);
      return value;
    } catch (err) {
      if (!(err instanceof ScrapeFailure) || !err.exitAtFault) {
        // The platform answered about the event itself (not found, a page it could not read), or
        // said nothing (a time-out, a 5xx): no verdict on the refusal either way.
        if (err instanceof ScrapeFailure && !err.retryable && err.kind !== 'blocked' && err.kind !== 'browser_missing') pool.answered(exit, target);
        else pool.released(target);
        throw err;
      }
      // Charged to the target only if the next exit refuses it too (refusals.ts judges that one).
      refusedOn = { exit, session, failure: err };
      if (tries >= maxTries || pool.exits.length === 1 || signal?.aborted) throw charge(pool, refusedOn, target, source);
    }
  }
}

/** Charges the last refusal as a poll's would be (ExitPool.refused), or on demand to the target only. */
function charge(pool: ExitPool, refused: Refused, target: string, source: RefusalSource): ScrapeFailure {
  pool.refused(refused.exit, refused.session ?? null, target, { retryAfterMs: refused.failure.retryAfterMs, message: refused.failure.message }, source);
  return refused.failure;
}
