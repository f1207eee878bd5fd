// The wall's header check: client hints that agree with the user agent, no HeadlessChrome, an
// accept-language (every browser sends one), and the relative order of the headers that the
// claimed browser always keeps. The order rules are few on purpose: each holds for real
// Chromium's navigations and fetch() calls and for impit's Chrome profiles as measured on this
// machine (test/simulator/walls-measure.test.ts), and is broken by Node's, curl's and most HTTP
// libraries' order. Firefox's are from impit's Firefox profile and Firefox's published order.
import type { BrowserClaim, BrowserFamily } from './browser-claim.ts';

/** Request headers as Node gives them: lower-case names. */
export type HeaderValues = Readonly<Record<string, string | string[] | undefined>>;

/** [a, b]: when both are sent, a comes before b. */
export type OrderRule = readonly [string, string];

export const ORDER_RULES: Readonly<Record<BrowserFamily, readonly OrderRule[]>> = {
  // Chrome puts accept-encoding, accept-language and priority last, in that order, after the
  // user agent and the sec-fetch-* trio (site, mode, dest). Where the client hints go differs
  // between a navigation and a fetch(), so they have no rule.
  chrome: [
    ['user-agent', 'accept-encoding'],
    ['accept-encoding', 'accept-language'],
    ['accept-language', 'priority'],
    ['sec-fetch-site', 'sec-fetch-mode'],
    ['sec-fetch-mode', 'sec-fetch-dest'],
    ['user-agent', 'sec-fetch-site'],
  ],
  // Firefox starts with user-agent and accept, puts accept-language before accept-encoding (the
  // other way round from Chrome), and its sec-fetch-* trio as dest, mode, site.
  firefox: [
    ['user-agent', 'accept'],
    ['accept', 'accept-language'],
    ['accept-language', 'accept-encoding'],
    ['sec-fetch-dest', 'sec-fetch-mode'],
    ['sec-fetch-mode', 'sec-fetch-site'],
  ],
  // Not measured against a real Safari here: no order is judged.
  safari: [],
};

/** The first value of a header, '' when absent. */
function single(headers: HeaderValues, name: string): string {
  const value = headers[name];
  return (Array.isArray(value) ? value[0] : value) ?? '';
}

/** The brands and versions of a `sec-ch-ua` value: `"Chromium";v="142", "Not_A Brand";v="99"`. */
export function clientHintBrands(value: string): { brand: string; version: string }[] {
  const brands: { brand: string; version: string }[] = [];
  for (const match of value.slice(0, 1024).matchAll(/"([^"]*)"\s*;\s*v\s*=\s*"([^"]*)"/g)) brands.push({ brand: match[1]!, version: match[2]! });
  return brands;
}

/** Why the request fails the check, or null when it passes. A request claiming no browser fails. */
export function checkHeaders(headers: HeaderValues, order: readonly string[], claim: BrowserClaim | null): string | null {
  const userAgent = single(headers, 'user-agent');
  const hints = single(headers, 'sec-ch-ua');
  if (/headlesschrome/i.test(userAgent) || /headlesschrome/i.test(hints)) return 'HeadlessChrome in the user agent or sec-ch-ua';
  if (!claim) return 'the user agent names no browser';
  if (!single(headers, 'accept-language')) return 'no accept-language';
  if (claim.family === 'chrome') {
    const wrong = chromeHintsWrong(headers, hints, claim);
    if (wrong) return wrong;
  } else {
    const hint = Object.keys(headers).find((name) => name.startsWith('sec-ch-ua'));
    if (hint) return `${hint} sent by a ${claim.family}, which sends no client hints`;
  }
  return orderBroken(order, ORDER_RULES[claim.family]);
}

function chromeHintsWrong(headers: HeaderValues, hints: string, claim: BrowserClaim): string | null {
  if (!hints) return 'no sec-ch-ua from a Chrome';
  if (claim.major !== null && !clientHintBrands(hints).some((b) => b.version === String(claim.major))) return `sec-ch-ua has no brand at the user agent's version ${claim.major}`;
  const mobile = single(headers, 'sec-ch-ua-mobile');
  if (mobile !== '?0' && mobile !== '?1') return 'no sec-ch-ua-mobile (?0 or ?1) from a Chrome';
  const platform = single(headers, 'sec-ch-ua-platform');
  if (!platform) return 'no sec-ch-ua-platform from a Chrome';
  if (claim.os && claim.os !== 'iOS' && platform !== `"${claim.os}"`) return `sec-ch-ua-platform ${platform.slice(0, 40)} where the user agent says ${claim.os}`;
  return null;
}

/** The first rule the order breaks, as a reason, or null. Each name's first place counts. */
export function orderBroken(order: readonly string[], rules: readonly OrderRule[]): string | null {
  const first = new Map<string, number>();
  for (let i = 0; i < order.length; i++) if (!first.has(order[i]!)) first.set(order[i]!, i);
  for (const [a, b] of rules) {
    const at = first.get(a);
    const bt = first.get(b);
    if (at !== undefined && bt !== undefined && at > bt) return `${b} before ${a}`;
  }
  return null;
}
