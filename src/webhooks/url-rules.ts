// Which URLs a webhook may have (issue 15, "Safe"). `urlProblem` is pure: https only, no
// credentials or fragment, a literal host must be a public address (addressProblem), and
// names that only ever mean this machine or its network are refused outright. `hostProblem`
// then resolves a name and checks every address it gets back; the resolver is injected so
// tests never ask a real DNS server. WEBHOOK_ALLOW_PRIVATE_NETWORKS lifts both (and allows
// http), for local development and tests only.
import { lookup as dnsLookup } from 'node:dns/promises';
import { isIPv4 } from 'node:net';
import { addressProblem } from './address-rules.ts';

export const WEBHOOK_KINDS = ['standard', 'discord'] as const;
export type WebhookKind = (typeof WEBHOOK_KINDS)[number];

export const URL_MAX_CHARS = 2048;

/** Resolves a host name to every address it has (dns.lookup with `all: true`). */
export type HostLookup = (hostname: string) => Promise<readonly { address: string }[]>;

export const systemLookup: HostLookup = (hostname) => dnsLookup(hostname, { all: true, verbatim: true });

// Names that resolve inside by convention (RFC 6761, 6762, 8375) or that only an intranet
// resolver could answer (no dot): refused without asking DNS.
const LOCAL_NAME = /(?:^|\.)(?:localhost|local|localdomain|internal|intranet|lan|home\.arpa|corp)\.?$/i;
const DISCORD_HOSTS = new Set(['discord.com', 'discordapp.com', 'ptb.discord.com', 'canary.discord.com']);
const DISCORD_PATH = /^\/api(?:\/v\d+)?\/webhooks\/\d{1,25}\/[A-Za-z0-9_-]{1,200}$/;

export interface UrlRules {
  /** WEBHOOK_ALLOW_PRIVATE_NETWORKS: any address, and http as well as https. */
  allowPrivateNetworks: boolean;
}

/** The URL's host as an address literal (IPv6 without brackets), or null for a name. */
export function literalHost(url: URL): string | null {
  const h = url.hostname;
  if (h.startsWith('[')) return h.slice(1, -1);
  return isIPv4(h) ? h : null;
}

/**
 * Why `raw` cannot be a webhook URL of this kind, or null. Pure: no name is resolved here. The
 * WHATWG parser normalises every IPv4 spelling (`127.1`, `2130706433`, `0x7f000001`,
 * `0177.0.0.1`) to dotted form, and IPv4-mapped IPv6 to hex groups, before the address check.
 */
export function urlProblem(raw: string, kind: WebhookKind, rules: UrlRules): string | null {
  if (raw.length > URL_MAX_CHARS) return `must be at most ${URL_MAX_CHARS} characters`;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'must be an absolute https URL';
  }
  const schemes = rules.allowPrivateNetworks ? ['https:', 'http:'] : ['https:'];
  if (!schemes.includes(url.protocol)) return rules.allowPrivateNetworks ? 'must be an http or https URL' : 'must be an https URL';
  if (url.username || url.password) return 'must not carry a user name or password';
  if (url.hash) return 'must not have a fragment';
  if (rules.allowPrivateNetworks) return null;
  const literal = literalHost(url);
  if (literal !== null) {
    const problem = addressProblem(literal);
    return problem ? `host ${problem}` : null;
  }
  const host = url.hostname;
  if (!host.includes('.') || LOCAL_NAME.test(host)) return `host ${host} is a local name`;
  if (kind === 'discord' && (!DISCORD_HOSTS.has(host.toLowerCase()) || !DISCORD_PATH.test(url.pathname) || url.port)) {
    return 'must be a Discord webhook URL (https://discord.com/api/webhooks/{id}/{token})';
  }
  return null;
}

/**
 * Why the URL's host may not be delivered to: null when every address it resolves to is public
 * (or private networks are allowed). Call after urlProblem accepted the URL.
 */
export async function hostProblem(url: URL, rules: UrlRules, lookup: HostLookup): Promise<string | null> {
  if (rules.allowPrivateNetworks) return null;
  const literal = literalHost(url);
  if (literal !== null) return addressProblem(literal);
  let addresses: readonly { address: string }[];
  try {
    addresses = await lookup(url.hostname);
  } catch {
    return `host ${url.hostname} does not resolve`;
  }
  if (addresses.length === 0) return `host ${url.hostname} does not resolve`;
  for (const { address } of addresses) {
    const problem = addressProblem(address);
    if (problem) return `host ${url.hostname} resolves to ${problem.replace(/^\S+ is /, `${address}, `)}`;
  }
  return null;
}
