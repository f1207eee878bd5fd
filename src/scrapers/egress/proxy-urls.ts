// SCRAPE_PROXY_URLS (issue 27): the proxies each platform's requests leave through, and the
// tracker's to marketplaces A and B (a group may name them like a platform). One list for
// every site (`http://user:pass@10.0.0.1:8000,http://10.0.0.2:8000`), or groups separated by
// `;`, each led by the platforms it serves (`pf_03,pf_08=http://a:8000 http://b:8000;*=http://c:8000`,
// `*` for every platform no group names). Within a group, URLs are separated by commas or spaces.
// A platform with no proxy connects directly, as before.
//
// A proxy URL carries its credentials; they reach the proxy in a Proxy-Authorization header (or the
// SOCKS handshake) and nowhere else: everything that names a proxy in a log, a metric or `npm run ops`
// uses its label (scheme://host:port), never its URL.
import { TRACKABLE_MARKETPLACES, type TrackableMarketplace } from '../../market-data/tracking-ref.ts';
import { PLATFORM_KEYS, type PlatformKey } from '../../platform/registry.ts';

/** What requests go to: the platforms, and the marketplaces the tracker scrapes. */
export const PROXIED_SITES = [...PLATFORM_KEYS, ...TRACKABLE_MARKETPLACES] as const;
export type ProxiedSite = PlatformKey | TrackableMarketplace;

function isProxiedSite(key: string): key is ProxiedSite {
  return (PROXIED_SITES as readonly string[]).includes(key);
}

/** Proxy schemes the fetchers speak: an HTTP proxy (plain or over TLS), or SOCKS 4/5. */
export const PROXY_SCHEMES = ['http:', 'https:', 'socks:', 'socks4:', 'socks4a:', 'socks5:', 'socks5h:'] as const;

export interface ProxyEndpoint {
  /** The whole URL, credentials included: hand it to an agent, never to a log. */
  readonly url: string;
  /** scheme://host:port, for logs, metrics and the ops CLI. */
  readonly label: string;
  readonly kind: 'http' | 'socks';
}

/** A proxy's name without its credentials: scheme://host:port. */
export function proxyLabel(url: URL): string {
  const port = url.port || (url.protocol === 'https:' ? '443' : url.protocol === 'http:' ? '80' : '1080');
  return `${url.protocol}//${url.hostname}:${port}`;
}

/** Parses one proxy URL; throws an Error that names it by label only. */
export function parseProxyUrl(text: string): ProxyEndpoint {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    // The text may hold a password: say what is wrong without repeating it.
    throw new Error(`a proxy URL could not be parsed (it must look like http://user:password@host:port)`);
  }
  const label = proxyLabel(url);
  if (!(PROXY_SCHEMES as readonly string[]).includes(url.protocol)) throw new Error(`${label}: a proxy must be ${PROXY_SCHEMES.map((s) => s.slice(0, -1)).join(', ')}`);
  if (!url.hostname) throw new Error(`${label}: the proxy URL has no host`);
  if (url.pathname !== '/' && url.pathname !== '' && !url.protocol.startsWith('socks')) throw new Error(`${label}: a proxy URL has no path`);
  return { url: url.href, label, kind: url.protocol.startsWith('socks') ? 'socks' : 'http' };
}

/** Each site's proxies (an empty list: direct). Throws an Error naming what is wrong. */
export function parseProxyUrls(text: string | undefined): Readonly<Record<ProxiedSite, readonly ProxyEndpoint[]>> {
  const out = Object.fromEntries(PROXIED_SITES.map((k) => [k, [] as ProxyEndpoint[]])) as Record<ProxiedSite, ProxyEndpoint[]>;
  const trimmed = (text ?? '').trim();
  if (trimmed === '') return out;
  const named = new Set<ProxiedSite>();
  let fallback: ProxyEndpoint[] | null = null;
  for (const group of trimmed.split(';')) {
    if (group.trim() === '') continue;
    // A group is led by `platforms=` unless it is a bare list (the whole setting, or `*=`).
    const lead = /^\s*([a-z0-9_*,\s]+?)\s*=\s*(?!\/)/i.exec(group);
    const urls = (lead ? group.slice(lead[0].length) : group).split(/[\s,]+/).filter(Boolean);
    if (urls.length === 0) throw new Error(`the group '${(lead?.[1] ?? '').slice(0, 40)}=' lists no proxy`);
    const endpoints = urls.map(parseProxyUrl);
    const labels = new Set<string>();
    for (const e of endpoints) {
      // Two entries of one address would be paced as two and banned as one.
      const key = e.label;
      if (labels.has(key)) throw new Error(`${key} is listed twice in one group`);
      labels.add(key);
    }
    const platforms = lead ? lead[1]!.split(/[\s,]+/).filter(Boolean) : ['*'];
    for (const p of platforms) {
      const key = p.toLowerCase();
      if (key === '*') {
        if (fallback) throw new Error('more than one group is for every platform (*)');
        fallback = endpoints;
        continue;
      }
      if (!isProxiedSite(key)) throw new Error(`unknown platform '${p.slice(0, 40)}' (expected ${PLATFORM_KEYS[0]} … ${PLATFORM_KEYS.at(-1)}, ${TRACKABLE_MARKETPLACES.join(', ')} or *)`);
      if (named.has(key)) throw new Error(`${key} is in more than one group`);
      named.add(key);
      out[key] = endpoints;
    }
  }
  if (fallback) for (const k of PROXIED_SITES) if (!named.has(k)) out[k] = fallback;
  return out;
}
