// The bot-challenge pages the simulated sites answer with instead of their content: when an address
// is banned with `ban_answer: 'challenge'` (address-limits.ts) and for an event whose behaviour is
// `challenge` (behaviour.ts). Real anti-bot vendors answer a suspected bot with status 200 and an
// interstitial, not with an error status, so a scraper that only reads the status takes the
// challenge for the page; a scraper must recognise these by their headers and bodies. Akamai is
// the exception, as it is in the field: its edge refuses with a bare 403 "Access Denied" page and
// a reference number. Each platform stands behind one vendor's look (docs/simulator.md, "Limits
// and bans by address" and "Bot walls"); the walls (walls/) answer with the same pages.
import { randomBytes, randomUUID } from 'node:crypto';
import type { Context } from 'koa';
import type { MarketplaceKey } from '../market-data/tracking-ref.ts';
import type { PlatformKey } from '../platform/registry.ts';
import { answerPage, type PageContent } from './behaviour.ts';

export const CHALLENGE_FAMILIES = ['cloudflare', 'perimeterx', 'datadome', 'akamai'] as const;
export type ChallengeFamily = (typeof CHALLENGE_FAMILIES)[number];

export const PLATFORM_CHALLENGE_FAMILY: Readonly<Record<PlatformKey, ChallengeFamily>> = {
  pf_01: 'cloudflare',
  pf_02: 'perimeterx',
  pf_03: 'cloudflare',
  pf_04: 'datadome',
  pf_05: 'datadome',
  pf_06: 'perimeterx',
  pf_07: 'akamai',
  pf_08: 'akamai',
  pf_09: 'perimeterx',
  pf_10: 'datadome',
  pf_11: 'cloudflare',
};

/** The marketplaces are not in the table; they stand behind the most common one. */
export function challengeFamilyOf(site: PlatformKey | MarketplaceKey): ChallengeFamily {
  return (PLATFORM_CHALLENGE_FAMILY as Record<string, ChallengeFamily>)[site] ?? 'cloudflare';
}

/** A challenge as a route answers it: status 200 (403 for Akamai's refusal), with the vendor's headers. */
export interface ChallengePage extends PageContent {
  status: 200 | 403;
  headers: Record<string, string>;
}

export const CLOUDFLARE_CHALLENGE_HTML =
  '<!doctype html><html><head><title>Just a moment...</title></head><body><div id="challenge-running">Checking your browser before accessing the site.</div></body></html>';

const PERIMETERX_HTML = [
  '<!doctype html>',
  '<html lang="en"><head><meta charset="utf-8"><title>Access to this page has been denied</title></head>',
  '<body><h1>Please verify you are a human</h1><div id="px-captcha"></div>',
  '<script>window._pxAppId = "PXsim0001";</script><script src="/px/captcha.js"></script></body></html>',
].join('\n');

const DATADOME_HTML = [
  '<!doctype html>',
  '<html lang="en"><head><meta charset="utf-8"><title>Please enable JS and disable any ad blocker</title></head>',
  '<body><script src="https://ct.captcha-delivery.com/c.js"></script>',
  '<iframe src="https://geo.captcha-delivery.com/captcha/?initialCid=sim"></iframe></body></html>',
].join('\n');

/**
 * Akamai's edge refusal, as its servers write it: upper-case tags, the URL and the reference
 * number HTML-escaped character by character. The reference is
 * `18.{edge id}.{epoch seconds}.{request id}`, new on every refusal.
 */
function akamaiHtml(): string {
  const escape = (text: string) => text.replace(/[^A-Za-z0-9]/g, (c) => `&#${c.charCodeAt(0)};`);
  const reference = `18.${randomBytes(4).toString('hex')}.${Math.floor(Date.now() / 1000)}.${randomBytes(4).toString('hex')}`;
  return [
    '<HTML><HEAD>',
    '<TITLE>Access Denied</TITLE>',
    '</HEAD><BODY>',
    '<H1>Access Denied</H1>',
    ' ',
    `You don't have permission to access "${escape('/')}" on this server.<P>`,
    `${escape(`Reference #${reference}`)}`,
    '<P>https&#58;&#47;&#47;errors&#46;edgesuite&#46;net&#47;' + escape(reference),
    '</BODY>',
    '</HTML>',
    '',
  ].join('\n');
}

/** The challenge of `family` for a route of `type`; the random ids are new on every call, as the vendors' are. */
export function renderChallengeOf(family: ChallengeFamily, type: 'html' | 'json'): ChallengePage {
  switch (family) {
    case 'cloudflare':
      // Cloudflare answers an XHR with the same HTML interstitial.
      return { status: 200, type: 'html', headers: { 'cf-mitigated': 'challenge' }, body: CLOUDFLARE_CHALLENGE_HTML };
    case 'perimeterx':
      return type === 'json'
        ? {
            status: 200,
            type: 'json',
            headers: {},
            body: { appId: 'PXsim0001', jsClientSrc: '/px/client.js', firstPartyEnabled: true, vid: randomUUID(), uuid: randomUUID(), hostUrl: '/px/xhr', blockScript: '/px/captcha.js' },
          }
        : { status: 200, type: 'html', headers: {}, body: PERIMETERX_HTML };
    case 'datadome':
      return type === 'json'
        ? { status: 200, type: 'json', headers: { 'x-datadome': 'protected' }, body: { url: `https://geo.captcha-delivery.com/captcha/?initialCid=sim&cid=${randomBytes(12).toString('hex')}` } }
        : { status: 200, type: 'html', headers: { 'x-datadome': 'protected' }, body: DATADOME_HTML };
    case 'akamai':
      // The same HTML page whatever the route asked for, as Akamai's edge answers an XHR too.
      return { status: 403, type: 'html', headers: { server: 'AkamaiGHost', 'mime-version': '1.0' }, body: akamaiHtml() };
  }
}

/** The challenge `site` (a platform or a marketplace) answers on a route of `type`. */
export function renderChallenge(site: PlatformKey | MarketplaceKey, type: 'html' | 'json'): ChallengePage {
  return renderChallengeOf(challengeFamilyOf(site), type);
}

export function answerChallenge(ctx: Context, site: PlatformKey | MarketplaceKey, type: 'html' | 'json'): void {
  const challenge = renderChallenge(site, type);
  for (const [name, value] of Object.entries(challenge.headers)) ctx.set(name, value);
  // An interstitial is never cached: the next request must meet the protection again.
  ctx.set('Cache-Control', 'no-store');
  answerPage(ctx, challenge);
}
