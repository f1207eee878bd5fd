// A worker's pool of platform clearances made in the browser (issue 23): a clearance is whatever a
// real browser visit leaves behind that lets plain HTTP requests through (pf_01: its anti-bot
// token, cookies and the user agent that got them). Making one costs a page load in Chromium, so
// polls share a few clearances and the browser is visited only to make or renew one:
// - a clearance is renewed in the background before it expires, at a random point between
//   RENEW_FROM and RENEW_UNTIL of its life, so clearances made together do not fall due together,
//   and polls go on with the old one meanwhile;
// - a clearance the platform refuses is renewed once: every poll that needs it waits for that one
//   renewal (single flight per slot) instead of each opening a page;
// - a failed make holds the pool back (doubling from BACKOFF_FIRST_MS to BACKOFF_MAX_MS) and says
//   why, so a missing browser or a changed challenge page costs one page load per back-off, not
//   one per poll; the caller decides what that means for it (poll-shard backs off as for a block).
import { ScrapeFailure, type ClearanceLease, type ClearancePool } from './types.ts';
import { untilAborted } from '../runtime/until-aborted.ts';

export interface ClearancePoolOptions<S> {
  /** Clearances kept at once (BROWSER_SESSIONS). */
  size: number;
  /** Makes one clearance in the browser; throws a ScrapeFailure saying why it could not. */
  make(signal: AbortSignal): Promise<S>;
  /** When the platform said the clearance ends (epoch ms), or null when it did not say. */
  expiresAt(clearance: S): number | null;
  /** Upper bound of one make, page load included. */
  makeTimeoutMs: number;
  now?: () => number;
  random?: () => number;
}

const RENEW_FROM = 0.7;
const RENEW_UNTIL = 0.9;
/** A clearance this close to its end is not handed out: a request could outlive it. */
const EXPIRY_MARGIN_MS = 2_000;
const BACKOFF_FIRST_MS = 5_000;
const BACKOFF_MAX_MS = 300_000;

interface Slot<S> {
  index: number;
  clearance: S | null;
  generation: number;
  madeAt: number;
  renewAt: number;
  expiresAt: number | null;
  making: Promise<S> | null;
}

function abortedFailure(): ScrapeFailure {
  return new ScrapeFailure('attempt_timeout', 'waiting for a clearance was aborted');
}

export function createClearancePool<S>(options: ClearancePoolOptions<S>): ClearancePool<S> {
  if (!Number.isInteger(options.size) || options.size < 1) throw new Error('the clearance pool size must be a positive integer');
  const now = options.now ?? Date.now;
  const random = options.random ?? Math.random;
  const slots: Slot<S>[] = Array.from({ length: options.size }, (_, index) => ({
    index,
    clearance: null,
    generation: 0,
    madeAt: 0,
    renewAt: Infinity,
    expiresAt: null,
    making: null,
  }));
  const stats = { made: 0, renewed: 0, refused: 0, failed: 0, polls: 0 };
  let failures = 0;
  let heldUntil = 0;
  let lastError: { failure: ScrapeFailure; at: number } | null = null;
  let turn = 0;
  let closed = false;
  const closing = new AbortController();

  const usable = (slot: Slot<S>, at: number): boolean => slot.clearance !== null && (slot.expiresAt === null || slot.expiresAt - EXPIRY_MARGIN_MS > at);

  const heldFailure = (at: number): ScrapeFailure => {
    const cause = lastError!.failure;
    const waitMs = Math.max(0, heldUntil - at);
    // Whatever stopped the make (no browser, a changed challenge page, a refusing platform), a
    // poll can only wait: it reads as a block, with the pool's back-off as its Retry-After.
    return new ScrapeFailure('blocked', `no clearance could be made: ${cause.message} (next try in ${Math.ceil(waitMs / 1000)} s)`, {
      cause,
      retryAfterMs: waitMs,
      // The platform refusing the page that makes clearances refuses the address it came from.
      refusedByPlatform: cause.refusedByPlatform,
    });
  };

  /** Makes (or renews) the slot's clearance; concurrent callers share the one make. */
  const make = (slot: Slot<S>): Promise<S> => {
    if (slot.making) return slot.making;
    const renewal = slot.generation > 0;
    const stop = new AbortController();
    const onClose = () => stop.abort();
    closing.signal.addEventListener('abort', onClose, { once: true });
    const timer = setTimeout(() => stop.abort(), options.makeTimeoutMs);
    const making = (async () => {
      try {
        const clearance = await options.make(stop.signal);
        if (closed) throw new ScrapeFailure('upstream', 'the clearance pool is closed');
        const at = now();
        const expiresAt = options.expiresAt(clearance);
        slot.clearance = clearance;
        slot.generation++;
        slot.madeAt = at;
        slot.expiresAt = expiresAt;
        // Fractions of the life it is handed out for: up to EXPIRY_MARGIN_MS before its end.
        slot.renewAt = expiresAt === null ? Infinity : at + Math.max(0, expiresAt - EXPIRY_MARGIN_MS - at) * (RENEW_FROM + random() * (RENEW_UNTIL - RENEW_FROM));
        stats.made++;
        if (renewal) stats.renewed++;
        failures = 0;
        lastError = null;
        return clearance;
      } catch (err) {
        const failure =
          err instanceof ScrapeFailure
            ? err
            : new ScrapeFailure('upstream', stop.signal.aborted ? `making a clearance took longer than ${options.makeTimeoutMs} ms` : `making a clearance failed: ${(err as Error).message}`, { cause: err });
        if (!closed) {
          stats.failed++;
          failures++;
          const at = now();
          heldUntil = at + Math.min(BACKOFF_MAX_MS, BACKOFF_FIRST_MS * 2 ** (failures - 1));
          lastError = { failure, at };
        }
        throw failure;
      } finally {
        clearTimeout(timer);
        closing.signal.removeEventListener('abort', onClose);
        slot.making = null;
      }
    })();
    slot.making = making;
    // A background renewal's failure is recorded above; nobody else need hear of it.
    making.catch(() => {});
    return making;
  };

  const lease = (slot: Slot<S>): ClearanceLease<S> => {
    stats.polls++;
    return { clearance: slot.clearance!, slot: slot.index, generation: slot.generation, madeAt: slot.madeAt };
  };

  /** Background work a handed-out lease starts: renew a slot due, or fill one empty slot. */
  const upkeep = (at: number): void => {
    if (closed || at < heldUntil) return;
    for (const slot of slots) {
      if (slot.clearance !== null && slot.renewAt <= at && !slot.making) void make(slot).catch(() => {});
    }
    // Fill the pool one slot at a time, as polls come, rather than a burst of page loads at start.
    if (slots.some((s) => s.making)) return;
    const empty = slots.find((s) => s.clearance === null);
    if (empty) void make(empty).catch(() => {});
  };

  const pickReady = (at: number): Slot<S> | null => {
    for (let i = 0; i < slots.length; i++) {
      const slot = slots[(turn + i) % slots.length]!;
      if (usable(slot, at)) {
        turn = (slot.index + 1) % slots.length;
        return slot;
      }
    }
    return null;
  };

  return {
    async acquire(signal) {
      for (let attempt = 0; ; attempt++) {
        if (closed) throw new ScrapeFailure('upstream', 'the clearance pool is closed');
        if (signal?.aborted) throw abortedFailure();
        const at = now();
        const ready = pickReady(at);
        if (ready) {
          upkeep(at);
          return lease(ready);
        }
        // Nothing usable: wait for a make in flight, or start one unless the pool is held back.
        const inFlight = slots.find((s) => s.making);
        if (!inFlight && at < heldUntil && lastError) throw heldFailure(at);
        const slot = inFlight ?? slots.find((s) => s.clearance === null || !usable(s, at))!;
        const clearance = untilAborted(make(slot), signal, abortedFailure);
        try {
          await clearance;
        } catch (err) {
          if (err instanceof ScrapeFailure && err.kind === 'attempt_timeout' && signal?.aborted) throw err;
          if (lastError && now() < heldUntil) throw heldFailure(now());
          throw err;
        }
        // Loop: the new clearance is normally usable at once; a bounded few tries otherwise.
        if (attempt >= 3) throw new ScrapeFailure('upstream', 'a clearance was made but expired before it could be used');
      }
    },

    ready() {
      if (closed) return null;
      const at = now();
      const slot = pickReady(at);
      // Nothing ready: this caller goes to the browser, and a clearance is made behind it for the
      // next one (unless the pool is held back), so on-demand scrapes alone also warm the pool.
      upkeep(at);
      return slot ? lease(slot) : null;
    },

    refused(refusedLease) {
      const slot = slots[refusedLease.slot];
      // Only the first report of this clearance counts; later ones find it already replaced.
      if (!slot || slot.generation !== refusedLease.generation || slot.clearance === null) return;
      stats.refused++;
      slot.clearance = null;
      if (!closed && now() >= heldUntil) void make(slot).catch(() => {});
    },

    stats() {
      const at = now();
      return {
        size: slots.length,
        ready: slots.filter((s) => usable(s, at)).length,
        ...stats,
        lastError: lastError && at < heldUntil ? { kind: lastError.failure.kind, message: lastError.failure.message, at: new Date(lastError.at).toISOString(), retry_at: new Date(heldUntil).toISOString() } : null,
      };
    },

    now,

    async close() {
      closed = true;
      closing.abort();
      await Promise.all(slots.map((s) => s.making?.catch(() => {})));
    },
  };
}
