// Decides an upgrade request before the WebSocket exists, in the gateway's order (spec 5.6):
// authentication (401 / 502), access to the `stream` API (403), the key's per-minute rate limit
// (429; an upgrade counts as one request), the resume position (400 when malformed), then a slot among the
// key's and the account's open connections (429 too_many_connections: the last check, so a
// refused upgrade holds no slot). The count and the slot are one call (connection-slots.ts,
// batched with the other upgrades in flight): the slot is asked for only when the resume
// position is well formed, and taken only within the rate limit. Rejected keys are
// limited per client address, like HTTP callers; an upgrade that sends no key guesses nothing,
// is not counted and is always 401 unauthenticated (spec 5.2). The stream costs no credits, so
// nothing is metered.
//
// An upgrade is decided here without waiting (admitNow) when every check can be answered from
// this node's memory: its key cached, allowed the stream, its account served, a well-formed
// last_id, and a slot this node took ahead for its key (connection-slots.ts): uWS then corks its
// 101 (upgrade-anchor.ts says why that matters). Anything else, refusals included, takes admit().
// Where a resuming client starts (resumePosition) is read once the connection is open.
import type { Pool } from '../../db/pool.ts';
import type { Config } from '../config.ts';
import type { Principal } from '../gateway/key-verifier.ts';
import { rateDecision, rateLimitHeaders, rateWindow, type RateDecision, type RateLimiter } from '../gateway/rate-limit.ts';
import type { Logger } from '../logger.ts';
import { NodeFenced, type ConnectionSlots, type SlotCaps } from './connection-slots.ts';
import { StreamRefusal } from './reasons.ts';

export interface AdmissionDeps {
  config: Pick<
    Config,
    'RATE_LIMIT_PER_MINUTE' | 'UNAUTHENTICATED_RATE_LIMIT_PER_MINUTE' | 'TRUST_PROXY' | 'STREAM_MAX_CONNECTIONS_PER_KEY' | 'STREAM_MAX_CONNECTIONS_PER_ACCOUNT'
  >;
  keys: { verify(key: string, beforeLookup?: () => Promise<void>): Promise<Principal | null>; cached(key: string): Principal | null | undefined };
  /** Address limits and the window of a refused key; an upgrade's own request is counted by `slots`. */
  limiter: Pick<RateLimiter, 'peek' | 'hitAddress' | 'addressSpent' | 'now'>;
  pool: Pool;
  log: Logger;
  /** The open-connection count shared by every node. */
  slots: Pick<ConnectionSlots, 'admit' | 'takeSpare' | 'release' | 'fenced'>;
}

/** What the upgrade handler read from the request (uWS request objects die at the first await). */
export interface UpgradeRequest {
  query: string;
  apikeyHeader: string;
  lastEventIdHeader: string;
  forwardedFor: string;
  remoteAddress: string;
}

export interface Admitted {
  principal: Principal;
  /** The key as sent: kept in memory only, to check it again while the connection lasts. */
  key: string;
  clientAddress: string;
  /** The resume position sent (resumePosition says where the replay starts), or null for "from now on". */
  lastId: number | null;
  headers: Record<string, string>;
}

/** Where a resuming connection's replay starts. */
export interface ResumePosition {
  lastId: number;
  /** Rows after lastId may have been pruned. */
  resumeGap: boolean;
  /** The log's committed head when it was read: the replay must reach it. */
  mustReach: number;
}

const LAST_ID = /^(0|[1-9][0-9]{0,15})$/;

/** A loopback peer is this host's own forwarder (src/stream/forward.ts) or an operator. */
function isLoopback(address: string): boolean {
  return address === '127.0.0.1' || address === '::1' || address === '::ffff:127.0.0.1' || address.startsWith('127.');
}

/**
 * The client's address: the peer's, or, from a trusted proxy (TRUST_PROXY) or the loopback
 * forwarder, the last X-Forwarded-For entry, the one that proxy appended itself (earlier
 * entries are whatever the client sent).
 */
export function clientAddress(remote: string, forwardedFor: string, trustProxy: boolean): string {
  if (!forwardedFor || !(trustProxy || isLoopback(remote))) return remote;
  const last = forwardedFor.split(',').pop()!.trim();
  return last || remote;
}

function single(params: URLSearchParams, name: string): string | null | 'repeated' {
  const all = params.getAll(name);
  if (all.length > 1) return 'repeated';
  return all[0] ?? null;
}

/** The key's rate limit per minute and the caps its connections are taken under. */
function limitsOf(principal: Principal, config: AdmissionDeps['config']): { rateLimit: number; caps: SlotCaps } {
  return {
    rateLimit: principal.rateLimitPerMinute ?? config.RATE_LIMIT_PER_MINUTE,
    caps: { keyLimit: principal.streamConnectionLimit, perKey: config.STREAM_MAX_CONNECTIONS_PER_KEY, perAccount: config.STREAM_MAX_CONNECTIONS_PER_ACCOUNT },
  };
}

/** The key sent: the header, else ?apikey= (browsers cannot set headers on a WebSocket); '' for none. */
function keyOf(req: UpgradeRequest, params: URLSearchParams): string {
  const queryKey = single(params, 'apikey');
  return req.apikeyHeader || (queryKey === 'repeated' ? '' : (queryKey ?? ''));
}

/** The resume position sent (?last_id=, else Last-Event-ID): null for none. */
function resumeFrom(params: URLSearchParams, req: UpgradeRequest): number | null | 'malformed' {
  const raw = single(params, 'last_id') ?? (req.lastEventIdHeader || null);
  if (raw === null) return null;
  return raw !== 'repeated' && LAST_ID.test(raw) && Number.isSafeInteger(Number(raw)) ? Number(raw) : 'malformed';
}

export class UpgradeAdmission {
  constructor(private readonly deps: AdmissionDeps) {}

  /** Decides the upgrade of connection `id`; an admitted one holds a slot its close must give back. */
  async admit(req: UpgradeRequest, id: string): Promise<Admitted | StreamRefusal> {
    // Fenced (connection-slots.ts): the database is out of reach, and every check below would hang on it.
    if (this.deps.slots.fenced) return StreamRefusal.of('service_unavailable', 'this node cannot reach the connection count; connect to another node');
    return this.decide(req, id);
  }

  /**
   * Admits the upgrade now, when this node's memory answers every check (the header says which)
   * and it holds a spare slot for the key: the connection's id is that slot's. Null otherwise,
   * refusals included: admit() decides those.
   */
  admitNow(req: UpgradeRequest): { id: string; admitted: Admitted } | null {
    const { config, keys, slots } = this.deps;
    if (slots.fenced) return null;
    const params = new URLSearchParams(req.query);
    const key = keyOf(req, params);
    const principal = key ? keys.cached(key) : null;
    if (!principal || !principal.apis.includes('stream') || !principal.served) return null;
    const lastId = resumeFrom(params, req);
    if (lastId === 'malformed') return null;
    const { rateLimit: limit, caps } = limitsOf(principal, config);
    const w = rateWindow(this.deps.limiter.now());
    const spare = slots.takeSpare({ keyId: principal.keyId, accountId: principal.accountId, subject: `key:${principal.keyId}`, windowStart: w.start, rateLimit: limit, caps });
    if (!spare) return null;
    const headers = rateLimitHeaders('default', rateDecision(spare.count.hits, limit, w.resetSeconds));
    return { id: spare.id, admitted: { principal, key: key!, clientAddress: clientAddress(req.remoteAddress, req.forwardedFor, config.TRUST_PROXY), lastId, headers } };
  }

  private async decide(req: UpgradeRequest, id: string): Promise<Admitted | StreamRefusal> {
    const { config, keys, log } = this.deps;
    const params = new URLSearchParams(req.query);
    const address = clientAddress(req.remoteAddress, req.forwardedFor, config.TRUST_PROXY);
    const key = keyOf(req, params);
    if (!key) return StreamRefusal.of('unauthenticated');

    let principal: Principal | null;
    try {
      principal = await keys.verify(key, async () => {
        const spent = await this.addressSpent(address);
        if (spent) throw spent;
      });
    } catch (err) {
      if (err instanceof StreamRefusal) return err;
      log.error({ err }, 'stream: key store unreachable');
      return StreamRefusal.of('service_unavailable', 'authentication backend unavailable');
    }
    if (!principal) return this.refuseRejectedKey(address);

    const subject = `key:${principal.keyId}`;
    const { rateLimit: limit, caps } = limitsOf(principal, config);
    if (!principal.apis.includes('stream')) {
      // Not counted (access comes before the limit), but the client still learns its window.
      const d = await this.deps.limiter.peek(subject, limit).catch(() => null);
      return StreamRefusal.of('forbidden', undefined, d ? rateLimitHeaders('default', d) : {});
    }
    // An account that is not served holds no connection (the stream is included with a plan, not free).
    if (!principal.served) return StreamRefusal.of(principal.hasBillingAccount ? 'no_subscription' : 'no_billing_account');
    const lastId = resumeFrom(params, req);
    const wellFormed = lastId !== 'malformed';
    const w = rateWindow(this.deps.limiter.now());
    let count;
    try {
      count = await this.deps.slots.admit({
        id,
        keyId: principal.keyId,
        accountId: principal.accountId,
        subject,
        windowStart: w.start,
        rateLimit: limit,
        caps: wellFormed ? caps : null,
      });
    } catch (err) {
      // Fenced: said once when it began (connection-slots.ts), not at every refused upgrade.
      if (!(err instanceof NodeFenced)) log.error({ err }, 'stream: the rate limit and connection count are unreachable');
      return StreamRefusal.of('service_unavailable', 'connection count unavailable');
    }
    const decision: RateDecision = rateDecision(count.hits, limit, w.resetSeconds);
    const headers = rateLimitHeaders('default', decision);
    if (!decision.allowed) return StreamRefusal.of('rate_limited', `more than ${decision.limit} requests in the current minute`, headers);
    if (!wellFormed) return StreamRefusal.of('invalid_parameter', 'last_id must be a non-negative integer: the id of the last message received', headers);
    if (count.refusal) {
      const full = count.refusal;
      const holder = full.scope === 'key' ? 'this key' : 'this account (all its keys together)';
      return StreamRefusal.of('too_many_connections', `${holder} already holds ${full.open} open stream connections, its limit of ${full.limit}; close one before opening another`, headers);
    }
    // From here the upgrade holds a slot.
    return { principal, key, clientAddress: address, lastId, headers };
  }

  /**
   * Where a connection that sent `lastId` resumes, read from the log once it is open (the hello
   * says it). Throws when the log cannot be read (the connection is closed with log_unavailable).
   */
  async resumePosition(lastId: number): Promise<ResumePosition> {
    const bounds = await this.bounds();
    // Ids a client has seen are committed, so they are at most the committed head (or, once
    // everything was pruned, the last id handed out).
    const known = bounds.head ?? bounds.lastAllocated;
    if (lastId > known) {
      // Only a log older than what the client saw does this: the database was restored from a
      // backup (or failed over to a replica that was behind). A 400 would be a refusal the client
      // must not retry, forever; instead the connection resumes from the log's last id, says so
      // in hello.last_id, and flags the gap so the client reloads its state. The ids after it are
      // handed out again, so the client must take hello.last_id as its position (docs/stream.md).
      this.deps.log.warn({ last_id: lastId, log_last_id: known }, 'stream: a client resumed from an id ahead of the log (database restored?); resuming from the log');
      return { lastId: known, resumeGap: true, mustReach: bounds.head ?? 0 };
    }
    // Rows are pruned oldest first: a gap exists when rows after lastId are gone. Skipped ids
    // (rolled-back or duplicate inserts) can make this say "maybe" when nothing was lost; the
    // client then reloads its state once, which is harmless.
    const resumeGap = bounds.oldest !== null ? lastId < bounds.oldest - 1 : lastId < bounds.lastAllocated;
    return { lastId, resumeGap, mustReach: bounds.head ?? 0 };
  }

  /**
   * The per-address limit before a key lookup (as the gateway's authenticate.ts): an address that
   * has spent its budget of rejected keys gets 429 for any key not already known valid, and the
   * key store is not asked.
   */
  private async addressSpent(address: string): Promise<StreamRefusal | null> {
    const { limiter, config, log } = this.deps;
    let d: RateDecision | null;
    try {
      d = await limiter.addressSpent(address, config.UNAUTHENTICATED_RATE_LIMIT_PER_MINUTE);
    } catch (err) {
      log.warn({ err }, 'stream: unauthenticated rate limiter unavailable');
      return null;
    }
    if (!d) return null;
    return StreamRefusal.of('rate_limited', `more than ${d.limit} rejected keys from this address in the current minute`, rateLimitHeaders('unauthenticated', d));
  }

  private async refuseRejectedKey(address: string): Promise<StreamRefusal> {
    const { limiter, config, log } = this.deps;
    let d: RateDecision | null = null;
    try {
      d = await limiter.hitAddress(address, config.UNAUTHENTICATED_RATE_LIMIT_PER_MINUTE);
    } catch (err) {
      // The limiter's store is down: the answer is a 401 either way, so say that.
      log.warn({ err }, 'stream: unauthenticated rate limiter unavailable');
    }
    if (!d) return StreamRefusal.of('invalid_credentials');
    const headers = rateLimitHeaders('unauthenticated', d);
    if (!d.allowed) return StreamRefusal.of('rate_limited', `more than ${d.limit} requests in the current minute`, headers);
    return StreamRefusal.of('invalid_credentials', undefined, headers);
  }

  private async bounds(): Promise<{ oldest: number | null; head: number | null; lastAllocated: number }> {
    const { rows } = await this.deps.pool.query<{ oldest: string | null; head: string | null; seq: string | null }>(
      `SELECT (SELECT min(id) FROM notifications) AS oldest, (SELECT max(id) FROM notifications) AS head,
              pg_sequence_last_value('notifications_id_seq'::regclass) AS seq`,
    );
    const r = rows[0]!;
    return {
      oldest: r.oldest === null ? null : Number(r.oldest),
      head: r.head === null ? null : Number(r.head),
      lastAllocated: Number(r.seq ?? 0),
    };
  }
}
