// Verifies API keys against the key store with an in-process cache. A cached answer is
// trusted for at most KEY_CACHE_TTL_MS from when its lookup was sent, which bounds how long a
// revoked key keeps working; expiry is checked on every request against the cached expires_at.
// Keys in use are refreshed ahead of their expiry, and lookups go to the store in batches.
import type { Db } from '../../db/connection.ts';
import type { ApiName } from './catalog.ts';
import { GroupedCalls } from '../runtime/grouped-calls.ts';
import { hashApiKey, looksLikeApiKey } from './keys.ts';

export interface Principal {
  keyId: string;
  accountId: number;
  apis: readonly ApiName[];
  /** Per-key override of the requests-per-minute limit; null means the service default. */
  rateLimitPerMinute: number | null;
  /** Per-key override of the open stream connections it may hold; null means the service default. */
  streamConnectionLimit: number | null;
  /**
   * The account's plan's on-demand scrapes per platform per calendar minute; null means the
   * service default (SCRAPE_REQUESTS_PER_PLATFORM_PER_MINUTE). Read with the key, so a plan change
   * applies within the cache's TTL, as a key's own limits do.
   */
  scrapeRequestsPerPlatformPerMinute: number | null;
  hasBillingAccount: boolean;
  /** The account's subscription is served (account_served, db/migrations/026): the stream needs it. */
  served: boolean;
  expiresAt: Date | null;
}

interface CacheEntry {
  principal: Principal | null;
  /** When the lookup that produced this entry was sent: the entry is no fresher than that. */
  fetchedAt: number;
}

const MAX_ENTRIES = 50_000;
const MAX_BATCH = 500;
const REFRESH_GATHER_MS = 50;

export class KeyVerifier {
  private readonly cache = new Map<string, CacheEntry>();
  /** Hashes queued or in flight, each with the answer its callers wait for. */
  private readonly pending = new Map<string, Promise<Principal | null>>();
  /** Lookups a request waits for: sent at once. */
  private readonly requests = new GroupedCalls<string, Principal | null>({ send: (hashes) => this.fetch(hashes), maxGroup: MAX_BATCH });
  /** Refreshes ahead of expiry: they wait a little for company, so keys due about together cost one query. */
  private readonly refreshes = new GroupedCalls<string, Principal | null>({ send: (hashes) => this.fetch(hashes), maxGroup: MAX_BATCH, gatherMs: REFRESH_GATHER_MS });

  constructor(
    private readonly db: Db,
    private readonly ttlMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * The key's principal, or null when the key is unknown, revoked or expired. Throws when the store
   * is unreachable. `beforeLookup` runs only when the key store must be asked (the key is not
   * cached), and may throw to refuse first: the per-address limit on rejected keys applies before
   * a lookup, so guessing keys costs the store nothing once an address has spent its budget.
   */
  async verify(key: string, beforeLookup?: () => Promise<void>): Promise<Principal | null> {
    if (!looksLikeApiKey(key)) return null;
    const hash = hashApiKey(key).toString('hex');
    const known = this.cachedHash(hash);
    if (known !== undefined) return known;
    await beforeLookup?.();
    return this.unexpired(await this.lookup(hash));
  }

  /**
   * The key's principal (or null) when the cache can answer now, without the key store; undefined
   * when the store must be asked (verify). For callers that cannot wait: the stream admits an
   * upgrade inside uWS's own handler only then (src/stream/admission.ts).
   */
  cached(key: string): Principal | null | undefined {
    if (!looksLikeApiKey(key)) return null;
    return this.cachedHash(hashApiKey(key).toString('hex'));
  }

  private cachedHash(hash: string): Principal | null | undefined {
    const hit = this.cache.get(hash);
    const age = hit ? this.now() - hit.fetchedAt : Infinity;
    if (!hit || age >= this.ttlMs) return undefined;
    // Refresh ahead: a key in use is looked up again in the background after half its TTL, so
    // its entry never expires under traffic and requests never wait on the key store. Before,
    // every key cached in the same second expired in the same second, and one lookup per key
    // queued ahead of that second's requests (bench:gateway, paid p99 at 2,000/s: 563 ms
    // then, 21-30 ms now). A failed refresh is dropped: the entry is still within its TTL,
    // and once past it requests wait for a lookup, and fail closed if the store is down.
    if (age >= this.ttlMs / 2) this.lookup(hash, false).catch(() => {});
    return this.unexpired(hit.principal);
  }

  private unexpired(principal: Principal | null): Principal | null {
    if (principal?.expiresAt && principal.expiresAt.getTime() <= this.now()) return null;
    return principal;
  }

  /**
   * Queues a lookup; concurrent lookups of one key share it, and queued keys go in one query.
   * Requests and refreshes queue apart, so a request never waits behind a refresh: a request's
   * queue is sent at once, while a refresh waits up to REFRESH_GATHER_MS for company, so keys due
   * about together cost one query rather than one each.
   */
  private lookup(hash: string, waited = true): Promise<Principal | null> {
    const existing = this.pending.get(hash);
    if (existing) {
      // The entry expired while its refresh was still gathering: send it with the requests.
      if (waited) this.refreshes.expedite(hash, this.requests);
      return existing;
    }
    const promise = (waited ? this.requests : this.refreshes).call(hash);
    this.pending.set(hash, promise);
    return promise;
  }

  /**
   * One query for `hashes`: caches each answer (as of when it was sent) and ends their pending
   * lookups before their callers hear, so a later call finds the cache, not a settled lookup.
   */
  private async fetch(hashes: string[]): Promise<(Principal | null)[]> {
    const sentAt = this.now();
    let rows;
    try {
      rows = await this.db('api_keys as k')
        .join('accounts as a', 'a.id', 'k.account_id')
        // At most one subscription per account (its unique account_id); none leaves the plan's limit null.
        .leftJoin('subscriptions as s', 's.account_id', 'a.id')
        .leftJoin('plans as p', 'p.id', 's.plan_id')
        .whereIn(
          'k.hash',
          hashes.map((h) => Buffer.from(h, 'hex')),
        )
        .whereNull('k.revoked_at')
        .select('k.hash', 'k.id', 'k.account_id', 'k.apis', 'k.rate_limit_per_minute', 'k.stream_connection_limit', 'p.scrape_requests_per_platform_per_minute', 'k.expires_at', 'a.customer_id', this.db.raw('account_served(a.id) AS served'));
    } finally {
      for (const hash of hashes) this.pending.delete(hash);
    }
    const found = new Map<string, Principal>();
    for (const row of rows) {
      found.set((row.hash as Buffer).toString('hex'), {
        keyId: row.id,
        accountId: Number(row.account_id),
        apis: row.apis as ApiName[],
        rateLimitPerMinute: row.rate_limit_per_minute,
        streamConnectionLimit: row.stream_connection_limit,
        scrapeRequestsPerPlatformPerMinute: row.scrape_requests_per_platform_per_minute,
        hasBillingAccount: row.customer_id !== null,
        served: row.served === true,
        expiresAt: row.expires_at,
      });
    }
    return hashes.map((hash) => {
      const principal = found.get(hash) ?? null;
      this.store(hash, principal, sentAt);
      return principal;
    });
  }

  private store(hash: string, principal: Principal | null, fetchedAt: number): void {
    this.cache.delete(hash);
    if (this.cache.size >= MAX_ENTRIES) {
      // Maps iterate in insertion order, and a refreshed entry is re-inserted: drop the oldest.
      const oldest = this.cache.keys().next().value;
      if (oldest !== undefined) this.cache.delete(oldest);
    }
    this.cache.set(hash, { principal, fetchedAt });
  }
}
