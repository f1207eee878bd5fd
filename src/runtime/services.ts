// Builds the services every request handler receives, once per process.
import type { Config } from '../config.ts';
import type { Db } from '../../db/connection.ts';
import type { Logger } from '../logger.ts';
import { LocalBillingProvider } from '../billing/local-provider.ts';
import { KeyVerifier } from '../gateway/key-verifier.ts';
import { Metrics } from '../gateway/metrics.ts';
import { RateLimiter } from '../gateway/rate-limit.ts';
import type { Services } from '../gateway/request-state.ts';

export function createServices(config: Config, db: Db, log: Logger, metrics = new Metrics()): Services {
  return {
    config,
    db,
    log,
    billing: new LocalBillingProvider(db),
    keys: new KeyVerifier(db, config.KEY_CACHE_TTL_MS),
    limiter: new RateLimiter(db),
    metrics,
  };
}

/**
 * Periodic upkeep: releases credit reservations orphaned by a crash and drops finished
 * rate-limit windows. Returns a stop function.
 */
export function startHousekeeping(services: Services, everyMs = 60_000): () => void {
  const { billing, limiter, config, log } = services;
  const tick = async () => {
    try {
      const released = await billing.releaseOrphans(config.RESERVATION_TIMEOUT_MS);
      if (released) log.warn({ released }, 'released orphaned credit reservations');
      await limiter.prune();
    } catch (err) {
      log.warn({ err }, 'housekeeping failed; will retry');
    }
  };
  const timer = setInterval(tick, everyMs);
  timer.unref();
  void tick();
  return () => clearInterval(timer);
}
