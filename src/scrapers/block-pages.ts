// How a platform's anti-bot wall looks when it answers 200 (issue 27): a challenge or CAPTCHA page
// instead of the page or API answer asked for. 403 and 429 are blocks whatever the body
// (answer-status.ts); these rules catch the walls a status alone would let through, to be read as
// inventory. Each adapter says which wall its platform runs (its `blockPage`), from the three
// families seen on ticketing sites (and Akamai, whose refusal is a 403 the status already blocks:
// its rule names the wall); the fetchers check every answer they return against it, and
// a match is a `blocked` failure like a 403: never a page, never an empty inventory. Each scrape's
// fetchers carry their platform's rule bound (scrape-via.ts).

/** What a fetcher shows a rule: the answer's status, headers (lower-case names) and body. */
export interface AnswerSeen {
  status: number;
  headers: Readonly<Record<string, string | string[] | undefined>>;
  body: string;
}

/** Says what wall the answer is (`a Cloudflare challenge page`), or null when it is not one. */
export type BlockPageRule = (answer: AnswerSeen) => string | null;

function header(answer: AnswerSeen, name: string): string | undefined {
  const value = answer.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** The start of the body, where every wall puts its marks: a large page is not searched whole. */
function head(body: string): string {
  return body.length > 4096 ? body.slice(0, 4096) : body;
}

/** Cloudflare's managed challenge: `cf-mitigated: challenge`, or its "Just a moment..." page. */
export const cloudflareChallenge: BlockPageRule = (answer) => {
  if (header(answer, 'cf-mitigated') === 'challenge') return 'a Cloudflare challenge page (cf-mitigated: challenge)';
  return head(answer.body).includes('<title>Just a moment...</title>') ? 'a Cloudflare challenge page ("Just a moment...")' : null;
};

/** PerimeterX (HUMAN): its "Press & Hold" CAPTCHA page, or the JSON block it gives API calls. */
export const perimeterxBlock: BlockPageRule = (answer) => {
  const start = head(answer.body);
  if (start.includes('id="px-captcha"')) return 'a PerimeterX CAPTCHA page (px-captcha)';
  if (start.startsWith('{') && start.includes('"blockScript"') && start.includes('"appId"')) return 'a PerimeterX block (JSON with blockScript)';
  return null;
};

/** DataDome: its captcha-delivery.com page or JSON, or its `x-datadome` header on a refusal. */
export const datadomeBlock: BlockPageRule = (answer) => {
  if (head(answer.body).includes('captcha-delivery.com')) return 'a DataDome CAPTCHA (captcha-delivery.com)';
  return null;
};

/**
 * Akamai: its edge's "Access Denied" page with a "Reference #" (HTML-escaped as `&#32;&#35;` by
 * the edge), or its `Server: AkamaiGHost` on a 403.
 */
export const akamaiBlock: BlockPageRule = (answer) => {
  const start = head(answer.body);
  if (/<title>\s*Access Denied\s*<\/title>/i.test(start) && /Reference(?: |&#32;)(?:#|&#35;)/.test(start)) return 'an Akamai "Access Denied" page (Reference #)';
  if (answer.status === 403 && header(answer, 'server') === 'AkamaiGHost') return 'an Akamai refusal (403 from AkamaiGHost)';
  return null;
};

/** No wall is known: only 403 and 429 block. */
export const noBlockPage: BlockPageRule = () => null;
