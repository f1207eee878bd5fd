// One piece of scraping work done with a session of an exit pool (issue 27), and what its outcome
// tells the pool: an answer means the exit is not blocked; a block the platform answered (or a
// proxy that failed) retires the session and cools its exit down. Work given a session by its
// caller (a poller, which paces each exit itself and moves its targets on its own) is done once;
// otherwise a healthy exit is picked in turn, and on a block the work moves to the next healthy
// exit at once, up to MAX_EXITS_PER_SCRAPE, as a user would expect an on-demand scrape not to
// fail because one address of many was refused. Used by the platform scrapers (../index.ts) and
// the tracker's marketplace scrapers (../marketplaces/index.ts).
import { ScrapeFailure } from '../types.ts';
import type { ExitPool } from './exit-pool.ts';
import type { ScrapeSession } from './scrape-session.ts';

/** Exits one piece of work tries before it gives up on a block. */
export const MAX_EXITS_PER_SCRAPE = 3;

function allCooling(pool: ExitPool, now: number): ScrapeFailure {
  const waitMs = Math.max(0, pool.nextHealthyAt(now) - now);
  const what = pool.proxied ? `every proxy of ${pool.platform} (${pool.exits.length})` : `${pool.platform}`;
  return new ScrapeFailure('blocked', `${what} refused us lately and is cooling down (next in ${Math.ceil(waitMs / 1000)} s)`, { retryAfterMs: waitMs });
}

export async function throughExits<T>(pool: ExitPool, given: { session?: ScrapeSession; signal?: AbortSignal }, work: (session: ScrapeSession) => Promise<T>): Promise<T> {
  for (let tries = 1; ; tries++) {
    let session: ScrapeSession;
    if (given.session) {
      session = given.session;
    } else {
      const now = Date.now();
      const exit = pool.pick(now);
      if (!exit) throw allCooling(pool, now);
      session = pool.session(exit, now);
    }
    try {
      const value = await work(session);
      pool.succeeded(session);
      return value;
    } catch (err) {
      if (!(err instanceof ScrapeFailure) || !err.exitAtFault) throw err;
      pool.blocked(session, err.retryAfterMs, err.message);
      if (given.session || tries >= MAX_EXITS_PER_SCRAPE || given.signal?.aborted || pool.nextHealthyAt() > Date.now()) throw err;
    }
  }
}
