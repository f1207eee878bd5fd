// The three marketplaces of Market Data (spec 2.2, 2.3): their keys, the public hosts of their
// event pages, the form of their event ids, and the parser that turns what a client sends to
// POST /svc/data/events/add (a bare id or an event URL) into the marketplace's own event id.
// It is the gate between client input and the tracker's scrapers, so it is strict: a URL must
// name one of the marketplace's public hosts or lie below its configured base URL, and match
// the event page's path. The scrapers then fetch below the configured base URL using the id
// only, never the client's URL, so no client can make the service fetch another address.
// Pure (no I/O): shared by the API, the simulator, the scrapers and the workflow's callers.

export const MARKETPLACES = ['marketplace_a', 'marketplace_b', 'marketplace_c'] as const;
export type MarketplaceKey = (typeof MARKETPLACES)[number];

/** The marketplaces whose events can be tracked (C is only linked from A's pages). */
export const TRACKABLE_MARKETPLACES = ['marketplace_a', 'marketplace_b'] as const;
export type TrackableMarketplace = (typeof TRACKABLE_MARKETPLACES)[number];

export function isTrackableMarketplace(value: unknown): value is TrackableMarketplace {
  return typeof value === 'string' && (TRACKABLE_MARKETPLACES as readonly string[]).includes(value);
}

interface MarketplaceInfo {
  /** Hosts of the marketplace's public pages, lower case; the first is canonical. */
  hosts: readonly string[];
  /** The event id as it appears in the event URL. */
  id: RegExp;
  idShape: string;
  /** Event page paths below a host or the configured base URL; group 1 is the id. */
  path: RegExp;
  pathShape: string;
  /** The public event page of an id (canonical host). */
  page(id: string): string;
  example: string;
}

// Marketplace A ids are `E-<digits>`; the digits are the catalog id (migration 005), so they
// are not zero and stay below 10^12, where the ids of events known only from marketplace B start.
const A_ID = /^E-([1-9][0-9]{0,11})$/;

export const MARKETPLACE_INFO: Record<MarketplaceKey, MarketplaceInfo> = {
  marketplace_a: {
    hosts: ['www.marketplace-a.example', 'marketplace-a.example'],
    id: A_ID,
    idShape: 'E-<digits>',
    // An optional slug segment before /event/ as the site's own links carry it.
    path: /^(?:\/[a-z0-9-]{1,100})?\/event\/(E-[1-9][0-9]{0,11})\/?$/,
    pathShape: '/event/E-<digits>',
    page: (id) => `https://www.marketplace-a.example/event/${id}`,
    example: 'E-104729',
  },
  marketplace_b: {
    hosts: ['www.marketplace-b.example', 'marketplace-b.example'],
    id: /^[A-Za-z0-9]{6,32}$/,
    idShape: '6 to 32 letters or digits',
    path: /^(?:\/[a-z0-9-]{1,100})?\/event\/([A-Za-z0-9]{6,32})\/?$/,
    pathShape: '/event/{id} or /{slug}/event/{id}',
    page: (id) => `https://www.marketplace-b.example/event/${id}`,
    example: '0B005F2A9B1E4D2C',
  },
  marketplace_c: {
    hosts: ['www.marketplace-c.example'],
    id: /^[0-9]{4,12}$/,
    idShape: '4 to 12 digits',
    path: /^\/tickets\/([0-9]{4,12})\/?$/,
    pathShape: '/tickets/{id}',
    page: (id) => `https://www.marketplace-c.example/tickets/${id}`,
    example: '771204',
  },
};

/** The catalog id of a marketplace A event id (`E-104729` → 104729), or null if it is not one. */
export function marketplaceAEventNumber(id: string): number | null {
  const m = A_ID.exec(id);
  return m ? Number(m[1]) : null;
}

export function isMarketplaceEventId(marketplace: MarketplaceKey, id: string): boolean {
  return MARKETPLACE_INFO[marketplace].id.test(id);
}

/** The event's page on the marketplace's public site (what responses show, never a base URL). */
export function publicEventUrl(marketplace: MarketplaceKey, id: string): string {
  return MARKETPLACE_INFO[marketplace].page(id);
}

/** One Temporal workflow per tracked event: every spelling of the event (id or URL) shares it. */
export function trackingWorkflowId(marketplace: TrackableMarketplace, id: string): string {
  return `track:${marketplace}:${id}`;
}

export type TrackTargetResult = { ok: true; marketplace: TrackableMarketplace; id: string } | { ok: false; message: string };

const MAX_URL_LENGTH = 2048;

/**
 * The marketplace's event id from a bare id or an event URL. `baseUrl` is where the service
 * scrapes that marketplace (MARKETPLACE_X_BASE_URL): a URL below it is accepted too, so a page
 * address copied from the simulator works; any other host (internal addresses included) is
 * refused.
 */
export function parseTrackTarget(marketplace: TrackableMarketplace, input: { event_id?: string; url?: string }, baseUrl: string): TrackTargetResult {
  const info = MARKETPLACE_INFO[marketplace];
  if (input.event_id !== undefined) {
    const id = input.event_id.trim();
    if (!info.id.test(id)) {
      const hint = /^[a-z][a-z0-9+.-]*:\/\//i.test(id) ? '; send a URL in `url` instead' : '';
      return { ok: false, message: `event_id for ${marketplace} must be ${info.idShape}, e.g. ${info.example}${hint}` };
    }
    return { ok: true, marketplace, id };
  }
  return parseEventUrl(marketplace, (input.url ?? '').trim(), baseUrl);
}

function parseEventUrl(marketplace: TrackableMarketplace, raw: string, baseUrl: string): TrackTargetResult {
  const info = MARKETPLACE_INFO[marketplace];
  const example = info.page(info.example);
  if (!raw) return { ok: false, message: 'url must not be empty' };
  if (raw.length > MAX_URL_LENGTH) return { ok: false, message: `url must be at most ${MAX_URL_LENGTH} characters` };
  // URL parsing would silently drop or keep them; a URL that carries them is never what was meant.
  // eslint-disable-next-line no-control-regex -- matching control characters is the point
  if (/[\u0000-\u001f\u007f\s]/.test(raw)) return { ok: false, message: 'url must not contain spaces or control characters' };
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { ok: false, message: `url must be a full event URL of ${marketplace}, e.g. ${example}` };
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return { ok: false, message: 'url must use http or https' };
  if (url.username || url.password) return { ok: false, message: 'url must not carry credentials' };

  let path: string | null = null;
  if (!url.port && info.hosts.includes(url.hostname)) {
    path = url.pathname;
  } else {
    // Below the configured base URL: same origin (port included) and under its path.
    const base = new URL(baseUrl);
    const prefix = base.pathname.replace(/\/+$/, '');
    if (url.origin === base.origin && (url.pathname === prefix || url.pathname.startsWith(`${prefix}/`))) {
      path = url.pathname.slice(prefix.length) || '/';
    }
  }
  if (path === null) {
    return { ok: false, message: `url host '${url.hostname}${url.port ? `:${url.port}` : ''}' is not ${marketplace}'s (expected ${info.hosts.join(' or ')})` };
  }
  const m = info.path.exec(path);
  if (!m) return { ok: false, message: `url path for ${marketplace} must look like ${info.pathShape}, e.g. ${example}` };
  return { ok: true, marketplace, id: m[1]! };
}
