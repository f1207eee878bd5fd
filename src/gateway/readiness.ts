// Readiness probes for the APIs' ping and health routes (issue 14): each route answers 200 only
// when what it depends on answers, and otherwise 503 `service_unavailable` in the gateway
// envelope (spec 7.1 allows 502 or 503; 503 says "not ready", as a probe should), which the
// metering releases like any 5xx: never billed. A probe is bounded in time and cheap: its
// answer is shared by every caller for a short while, and concurrent callers share one check.
import { z } from 'zod';
import { GatewayError } from './errors.ts';

/** How long one dependency check may take before it counts as failed. */
export const PROBE_DEADLINE_MS = 2_000;
/** How long one answer (ready or not) is reused. */
export const PROBE_CACHE_MS = 1_000;

/** The body of a NotReadyError, for the routes' OpenAPI 503 response. */
export const notReadySchema = z
  .object({ error: z.object({ code: z.literal('service_unavailable'), message: z.string() }) })
  .meta({ description: 'Gateway envelope (spec 7.1), code service_unavailable' });

/** A dependency of the route is not ready: 503 `service_unavailable`, with a fixed message. */
export class NotReadyError extends GatewayError {
  override readonly status = 503;
  constructor(message: string) {
    super('service_unavailable', message);
  }
}

/**
 * Runs `check` at most once per `cacheMs` (in flight or settled) and rejects with NotReadyError
 * when it fails, throws a NotReadyError of its own, or takes longer than `deadlineMs`. The
 * underlying error never reaches the client: it is handed to `onFailure` (for the log).
 */
export class CachedProbe {
  private last: { at: number; outcome: Promise<NotReadyError | null> } | null = null;
  private pending: Promise<void> | null = null;

  constructor(
    private readonly check: () => Promise<void>,
    private readonly options: { unavailableMessage: string; deadlineMs?: number; cacheMs?: number },
  ) {}

  async assertReady(onFailure?: (err: unknown) => void): Promise<void> {
    const now = Date.now();
    if (!this.last || now - this.last.at >= (this.options.cacheMs ?? PROBE_CACHE_MS)) {
      this.last = { at: now, outcome: this.run(onFailure) };
    }
    const problem = await this.last.outcome;
    if (problem) throw problem;
  }

  private async run(onFailure?: (err: unknown) => void): Promise<NotReadyError | null> {
    const deadlineMs = this.options.deadlineMs ?? PROBE_DEADLINE_MS;
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`readiness check took longer than ${deadlineMs} ms`)), deadlineMs);
      timer.unref();
    });
    try {
      // A check still running from an earlier probe (a database that hangs) is awaited again
      // rather than started anew, so a dead dependency never piles up checks.
      this.pending ??= this.check().finally(() => {
        this.pending = null;
      });
      await Promise.race([this.pending, deadline]);
      return null;
    } catch (err) {
      onFailure?.(err);
      return err instanceof NotReadyError ? err : new NotReadyError(this.options.unavailableMessage);
    } finally {
      clearTimeout(timer);
    }
  }
}

/** One probe per key (a pool, a database handle), made on first use. */
export function probeFor<K extends object>(make: (key: K) => CachedProbe): (key: K) => CachedProbe {
  const probes = new WeakMap<K, CachedProbe>();
  return (key) => {
    let probe = probes.get(key);
    if (!probe) {
      probe = make(key);
      probes.set(key, probe);
    }
    return probe;
  };
}
