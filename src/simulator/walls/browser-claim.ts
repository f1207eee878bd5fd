// What browser a request's User-Agent claims to be: its family (whose TLS, HTTP/2 and headers the
// walls then expect), its major version and its operating system. Real walls start from the same
// claim and check the rest of the request against it: a claim is cheap to forge, a whole
// browser's wire behaviour is not.

/** The browser engines whose wire behaviour the walls know. */
export const BROWSER_FAMILIES = ['chrome', 'firefox', 'safari'] as const;
export type BrowserFamily = (typeof BROWSER_FAMILIES)[number];

/** The platform as Chrome's `sec-ch-ua-platform` names it, or 'iOS' (where no Chrome hints exist). */
export type ClaimedOs = 'Windows' | 'macOS' | 'Linux' | 'Android' | 'Chrome OS' | 'iOS';

export interface BrowserClaim {
  family: BrowserFamily;
  /** The major version the user agent gives (Chrome/142 → 142), or null when it has none. */
  major: number | null;
  os: ClaimedOs | null;
}

/** A longer user agent is no browser's (Chrome's is about 120 characters); not parsed. */
const MAX_UA_LENGTH = 1024;

/**
 * The claim of `userAgent`, or null when it names no browser (curl, python-requests, node, empty).
 * Chrome on iOS (CriOS) and Firefox on iOS (FxiOS) run on WebKit's network stack, so they are
 * Safari on the wire; Edge (Edg/), Opera (OPR/), HeadlessChrome and every other Chromium are Chrome.
 */
export function browserClaim(userAgent: string | undefined): BrowserClaim | null {
  if (!userAgent || userAgent.length > MAX_UA_LENGTH || !userAgent.startsWith('Mozilla/5.0 (')) return null;
  const os = claimedOs(userAgent);
  if (/\b(?:CriOS|FxiOS|EdgiOS)\/\d/.test(userAgent)) return { family: 'safari', major: versionOf(userAgent, /\bVersion\/(\d+)/), os };
  const chrome = /\b(?:Headless)?(?:Chrome|Chromium)\/(\d+)\./.exec(userAgent);
  if (chrome) return { family: 'chrome', major: Number(chrome[1]), os };
  const firefox = /\bFirefox\/(\d+)\./.exec(userAgent);
  if (firefox && userAgent.includes('Gecko/')) return { family: 'firefox', major: Number(firefox[1]), os };
  if (/\bAppleWebKit\/\d/.test(userAgent) && /\bSafari\/\d/.test(userAgent) && /\bVersion\/\d/.test(userAgent)) {
    return { family: 'safari', major: versionOf(userAgent, /\bVersion\/(\d+)/), os };
  }
  return null;
}

function versionOf(userAgent: string, pattern: RegExp): number | null {
  const match = pattern.exec(userAgent);
  return match ? Number(match[1]) : null;
}

/** The OS named in the user agent's first parenthesis; iPhone UAs say "like Mac OS X", so iOS is tested first. */
export function claimedOs(userAgent: string): ClaimedOs | null {
  const end = userAgent.indexOf(')');
  const system = end === -1 ? userAgent : userAgent.slice(0, end);
  if (/\b(?:iPhone|iPad|iPod)\b/.test(system)) return 'iOS';
  if (system.includes('Windows')) return 'Windows';
  if (system.includes('Android')) return 'Android';
  if (system.includes('CrOS')) return 'Chrome OS';
  if (system.includes('Macintosh') || system.includes('Mac OS X')) return 'macOS';
  if (system.includes('Linux') || system.includes('X11')) return 'Linux';
  return null;
}
