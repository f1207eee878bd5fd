// Verifies API keys against the key store with an in-process cache. A cached answer is
// trusted for at most KEY_CACHE_TTL_MS, which bounds how long a revoked key keeps working;
// expiry is checked on every request against the cached expires_at.
import type { Db } from '../../db/connection.ts';
import type { ApiName } from './catalog.ts';
import { hashApiKey, looksLikeApiKey } from './keys.ts';

export interface Principal {
  keyId: string;
  accountId: number;
  apis: readonly ApiName[];
  /** Per-key override of the requests-per-minute limit; null means the service default. */
  rateLimitPerMinute: number | null;
  hasBillingAccount: boolean;
  expiresAt: Date | null;
}

interface CacheEntry {
  principal: Principal | null;
  fetchedAt: number;
}

const MAX_ENTRIES = 50_000;

export class KeyVerifier {
  private readonly cache = new Map<string, CacheEntry>();
  private readonly inflight = new Map<string, Promise<Principal | null>>();

  constructor(
    private readonly db: Db,
    private readonly ttlMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** The key's principal, or null when the key is unknown, revoked or expired. Throws when the store is unreachable. */
  async verify(key: string): Promise<Principal | null> {
    if (!looksLikeApiKey(key)) return null;
    const hash = hashApiKey(key).toString('hex');
    const hit = this.cache.get(hash);
    const principal = hit && this.now() - hit.fetchedAt < this.ttlMs ? hit.principal : await this.load(hash);
    if (principal?.expiresAt && principal.expiresAt.getTime() <= this.now()) return null;
    return principal;
  }

  private load(hash: string): Promise<Principal | null> {
    // Concurrent first requests with one key share a single lookup.
    let pending = this.inflight.get(hash);
    if (!pending) {
      pending = this.fetch(hash).finally(() => this.inflight.delete(hash));
      this.inflight.set(hash, pending);
    }
    return pending;
  }

  private async fetch(hash: string): Promise<Principal | null> {
    const row = await this.db('api_keys as k')
      .join('accounts as a', 'a.id', 'k.account_id')
      .where('k.hash', Buffer.from(hash, 'hex'))
      .whereNull('k.revoked_at')
      .first('k.id', 'k.account_id', 'k.apis', 'k.rate_limit_per_minute', 'k.expires_at', 'a.customer_id');
    const principal: Principal | null = row
      ? {
          keyId: row.id,
          accountId: Number(row.account_id),
          apis: row.apis as ApiName[],
          rateLimitPerMinute: row.rate_limit_per_minute,
          hasBillingAccount: row.customer_id !== null,
          expiresAt: row.expires_at,
        }
      : null;
    if (this.cache.size >= MAX_ENTRIES) {
      // Maps iterate in insertion order: drop the oldest entry.
      const oldest = this.cache.keys().next().value;
      if (oldest !== undefined) this.cache.delete(oldest);
    }
    this.cache.delete(hash);
    this.cache.set(hash, { principal, fetchedAt: this.now() });
    return principal;
  }
}
