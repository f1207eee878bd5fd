// Parses a client's event id (spec 2.6: a bare id or a full event URL, per platform) and region
// into an EventRef: the platform's own event key plus the region the scrape runs in. It is the
// only gate between client input and the scrapers, so it is strict: a URL must use http(s),
// carry no credentials or port, name one of the platform's own hosts and match the platform's
// path shape. Scrapers then fetch below their configured base URL using `key` only, never the
// client's URL, so no client can make us fetch an arbitrary or internal address.
import { normaliseRegion, PLATFORMS, type PlatformKey } from './registry.ts';

export interface EventRef {
  platform: PlatformKey;
  /** The event id as the client gave it (trimmed): echoed in responses. */
  eventId: string;
  /** The platform's own event key, safe to put in a path segment. */
  key: string;
  /** Lower-case region code the scrape runs in. */
  region: string;
  /** The public host a URL event id named (one of the platform's hosts); null for bare ids. */
  host: string | null;
}

/**
 * `platform:region:key`: one name per scrapeable target, whatever spelling of the event id a
 * client used. Names the on-demand scrape runs, the watchlist pollers' targets and their snapshots.
 */
export function targetKey(ref: Pick<EventRef, 'platform' | 'region' | 'key'>): string {
  return `${ref.platform}:${ref.region}:${ref.key}`;
}

/** `field` names the input that was refused: the event id, or the region. */
export type EventRefResult = { ok: true; ref: EventRef } | { ok: false; field: 'event_id' | 'region'; message: string };

/** Bare ids, one pattern per bare-id platform. */
const BARE: Partial<Record<PlatformKey, { pattern: RegExp; shape: string }>> = {
  pf_01: { pattern: /^[A-Za-z0-9]{16}$/, shape: '16 letters or digits' },
  pf_05: { pattern: /^\d{6,10}$/, shape: '6 to 10 digits' },
  pf_06: { pattern: /^[A-Za-z0-9]{8}$/, shape: '8 letters or digits' },
  pf_09: { pattern: /^\d{4,9}$/, shape: '4 to 9 digits' },
  pf_10: { pattern: /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/, shape: 'a lower-case UUID' },
};

/** URL paths, one pattern per URL platform; group 1 is the event key. */
const PATHS: Partial<Record<PlatformKey, { pattern: RegExp; shape: string }>> = {
  pf_02: { pattern: /^\/[a-z]{2}\/event\/([A-Za-z0-9-]{3,64})\/?$/, shape: '/{locale}/event/{id}' },
  pf_03: { pattern: /^\/e\/([A-Za-z0-9-]{1,100})\/?$/, shape: '/e/{slug}' },
  pf_04: { pattern: /^\/[a-z]{2}\/tickets\/(\d{3,12})\/?$/, shape: '/{locale}/tickets/{number}' },
  pf_07: { pattern: /^\/event\/([a-z0-9-]{0,100}\d{3,12})\/?$/, shape: '/event/{slug-number}' },
  pf_08: { pattern: /^\/event\/([A-Za-z0-9-]{3,40})\/?$/, shape: '/event/{id}' },
  pf_11: { pattern: /^\/event\/(\d{1,12})\/?$/, shape: '/event/{number}' },
};

/**
 * Platforms whose region is the event URL's domain (spec 2.6: pf_08, one site per country): the
 * host → region table. For them the domain decides and a region the client sent is not checked;
 * the region answered and stored is the domain's.
 */
const REGION_BY_HOST: Partial<Record<PlatformKey, Readonly<Record<string, string>>>> = {
  pf_08: {
    'pf08.example.com.au': 'au',
    'pf08.example.co.nz': 'nz',
    'pf08.example.sg': 'sg',
    'pf08.example.com.my': 'my',
    'pf08.example.co.uk': 'uk',
    'pf08.example.com.ph': 'ph',
  },
};

/** The region an event URL's domain stands for, on a platform whose region is its domain's; else null. */
export function regionFromHost(platform: PlatformKey, host: string | null): string | null {
  return (host !== null && REGION_BY_HOST[platform]?.[host]) || null;
}

const MAX_EVENT_ID_LENGTH = 2048;

/**
 * The platform's event key (and the URL's host) from a client event id, without the region:
 * the format and host checks of spec 2.6 and the brief's security rule.
 */
export function parseEventKey(platform: PlatformKey, eventId: string): { ok: true; key: string; host: string | null } | { ok: false; message: string } {
  const info = PLATFORMS[platform];
  const id = eventId.trim();
  if (!id) return { ok: false, message: 'event_id must not be empty' };
  if (id.length > MAX_EVENT_ID_LENGTH) return { ok: false, message: `event_id must be at most ${MAX_EVENT_ID_LENGTH} characters` };
  // URL parsing would silently drop or keep them; an id that carries them is never what was meant.
  // eslint-disable-next-line no-control-regex -- matching control characters is the point
  if (/[\u0000-\u001f\u007f]/.test(id)) return { ok: false, message: 'event_id must not contain control characters' };

  if (info.eventIdForm === 'bare') {
    const bare = BARE[platform]!;
    if (!bare.pattern.test(id)) {
      return { ok: false, message: `event_id for ${platform} must be a bare id (${bare.shape}), e.g. ${info.event_id_example}` };
    }
    return { ok: true, key: id, host: null };
  }

  let url: URL;
  try {
    url = new URL(id);
  } catch {
    return { ok: false, message: `event_id for ${platform} must be a full event URL, e.g. ${info.event_id_example}` };
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return { ok: false, message: 'event_id URL must use http or https' };
  if (url.username || url.password) return { ok: false, message: 'event_id URL must not carry credentials' };
  if (url.port) return { ok: false, message: 'event_id URL must not name a port' };
  const hosts: readonly string[] = info.hosts;
  if (!hosts.includes(url.hostname)) {
    return { ok: false, message: `event_id URL host '${url.hostname}' does not belong to ${platform} (expected ${hosts.join(' or ')})` };
  }
  const path = PATHS[platform]!;
  const match = path.pattern.exec(url.pathname);
  if (!match) return { ok: false, message: `event_id URL path for ${platform} must look like ${path.shape}, e.g. ${info.event_id_example}` };
  return { ok: true, key: match[1]!, host: url.hostname };
}

export function parseEventRef(platform: PlatformKey, eventId: string, region: string): EventRefResult {
  const info = PLATFORMS[platform];
  const parsed = parseEventKey(platform, eventId);
  if (!parsed.ok) return { ok: false, field: 'event_id', message: parsed.message };
  const normalised = regionFromHost(platform, parsed.host) ?? normaliseRegion(platform, region);
  if (normalised === null) {
    const allowed = info.regions ? `one of ${info.regions.join(', ')}` : 'a 2-8 letter region code';
    return { ok: false, field: 'region', message: `region '${region}' is not supported by ${platform}: expected ${allowed}` };
  }
  return { ok: true, ref: { platform, eventId: eventId.trim(), key: parsed.key, region: normalised, host: parsed.host } };
}

/** pf_07 routes UK events to its dedicated UK monitor: by region, or by the UK host. */
export function isPf07UkEvent(ref: EventRef): boolean {
  return ref.platform === 'pf_07' && (ref.region === 'uk' || ref.host === 'www.pf07.example.co.uk');
}
