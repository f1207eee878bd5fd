// The simulator's own record of the event requests it was sent: when each arrived, for which
// platform and event, from which source address, and whether the address limits refused it.
// Tests and benches read what a platform really received from it (ground truth, not the
// service's view of its polls; per address, what each of a scraper's proxies sent and how much of
// it was refused): `GET /_sim/requests`, or `sim.requests` in process. A ring of the last
// REQUEST_LOG_SIZE requests, so a long run's memory stays bounded.

export const REQUEST_LOG_SIZE = 100_000;

export interface SimRequest {
  /** Epoch ms at which the request arrived. */
  at: number;
  platform: string;
  /**
   * The platform's event key; '' for a refused request whose key is in its body, which a refused
   * request's body is not read for (pf_10's POST /graphql).
   */
  key: string;
  /** The request's source address (IPv4 without the `::ffff:` of a dual-stack socket). */
  address: string;
  /** Answered with the ban answer of the address limits (address-limits.ts), never reaching the event. */
  refused: boolean;
}

export class RequestLog {
  private readonly ring: (SimRequest | undefined)[];
  private next = 0;
  /** Requests recorded so far, those overwritten included. */
  total = 0;

  constructor(private readonly size = REQUEST_LOG_SIZE) {
    this.ring = new Array<SimRequest | undefined>(size);
  }

  record(platform: string, key: string, address: string, at = Date.now(), refused = false): void {
    this.ring[this.next] = { at, platform, key, address, refused };
    this.next = (this.next + 1) % this.size;
    this.total++;
  }

  /** Requests kept that arrived at or after `since` (epoch ms), oldest first, optionally one platform's or one address's. */
  since(since: number, platform?: string, address?: string): SimRequest[] {
    const out: SimRequest[] = [];
    for (let i = 0; i < this.size; i++) {
      const r = this.ring[(this.next + i) % this.size];
      if (r && r.at >= since && (platform === undefined || r.platform === platform) && (address === undefined || r.address === address)) out.push(r);
    }
    return out;
  }

  clear(): void {
    this.ring.fill(undefined);
    this.next = 0;
    this.total = 0;
  }
}

export interface KeyFigures {
  requests: number;
  /** The longest time between two requests for the key in the window, counting from its start and to its end (ms). */
  maxGapMs: number;
}

/**
 * What each key received in the window [from, to): its requests and its longest gap, the window's
 * edges included (a key never asked has a gap of the whole window). Refused requests count (the
 * platform received them); those logged with no key ('') are no key's.
 */
export function keyFigures(requests: readonly SimRequest[], keys: readonly string[], from: number, to: number): Map<string, KeyFigures> {
  const times = new Map<string, number[]>(keys.filter((k) => k !== '').map((k) => [k, []]));
  for (const r of requests) if (r.at >= from && r.at < to && r.key !== '') times.get(r.key)?.push(r.at);
  const out = new Map<string, KeyFigures>();
  for (const [key, ts] of times) {
    ts.sort((a, b) => a - b);
    let gap = 0;
    let last = from;
    for (const t of ts) {
      gap = Math.max(gap, t - last);
      last = t;
    }
    out.set(key, { requests: ts.length, maxGapMs: Math.max(gap, to - last) });
  }
  return out;
}
