// Which browser a page's context says it is (issue 37): one user agent, one navigator.userAgentData
// and one set of client hints (sec-ch-ua, -mobile, -platform), all of one browser and version,
// never `HeadlessChrome`. Chromium headless says HeadlessChrome in its user agent (header and
// navigator.userAgent); Playwright's `userAgent` context option fixes the string but leaves the
// client hints to the browser, which may carry the headless brand and do not follow a user agent
// of another platform. So each page is given the whole identity at once through CDP's
// Emulation.setUserAgentOverride with its userAgentMetadata (browser-pages.ts): Chromium then
// derives the client-hint headers and navigator.userAgentData from it.
// - Without a proxy, the identity is the installed Chromium's own, as a headed Chromium of that
//   version presents itself: `Chrome/` for `HeadlessChrome/`, the brand list Chromium builds for
//   its major version (chromiumBrands). The browser is also launched with that user agent
//   (--user-agent), for what no page override reaches (workers), and because crawlee otherwise
//   launches headless Chromium as its DEFAULT_USER_AGENT, a Chrome 107 on macOS, whose client
//   hints then said Chromium 156 on Linux.
// - With a proxy, it is the scrape session's header set (header-generator): its user agent, and the
//   brands, platform and mobile flag of its client hints (or, if it has none, Chrome's for the
//   user agent's major version).

/** CDP's Emulation.UserAgentMetadata. */
export interface UserAgentMetadata {
  brands: { brand: string; version: string }[];
  fullVersionList: { brand: string; version: string }[];
  platform: string;
  platformVersion: string;
  architecture: string;
  model: string;
  mobile: boolean;
  bitness: string;
  wow64: boolean;
}

export interface BrowserIdentity {
  userAgent: string;
  metadata: UserAgentMetadata;
}

/** What Chromium's GREASE brand is built from (components/embedder_support/user_agent_utils.cc). */
const GREASE_CHARS = [' ', '(', ':', '-', '.', '/', ')', ';', '=', '?', '_'];
const GREASE_VERSIONS = ['8', '99', '24'];
const BRAND_ORDERS = [
  [0, 1, 2],
  [0, 2, 1],
  [1, 0, 2],
  [1, 2, 0],
  [2, 0, 1],
  [2, 1, 0],
] as const;

/**
 * The brand list Chromium of major version `major` sends: a GREASE brand and `Chromium`, plus
 * `brand` (`Google Chrome`) for a branded build, in the order its version seeds. Checked against
 * the installed Chromium's own list (test/scrapers/browser-identity.test.ts) and Chrome 120's and
 * 131's published headers.
 */
export function chromiumBrands(major: number, brand: string | null = null): { brand: string; version: string }[] {
  const seed = Math.max(0, Math.trunc(major));
  const version = String(seed);
  const grease = {
    brand: `Not${GREASE_CHARS[seed % GREASE_CHARS.length]}A${GREASE_CHARS[(seed + 1) % GREASE_CHARS.length]}Brand`,
    version: GREASE_VERSIONS[seed % GREASE_VERSIONS.length]!,
  };
  const chromium = { brand: 'Chromium', version };
  if (brand === null) return seed % 2 === 0 ? [grease, chromium] : [chromium, grease];
  const order = BRAND_ORDERS[seed % BRAND_ORDERS.length]!;
  const out: { brand: string; version: string }[] = [];
  out[order[0]] = grease;
  out[order[1]] = chromium;
  out[order[2]] = { brand, version };
  return out;
}

/** The major version a Chrome user agent names (`Chrome/156.0.0.0`), or null. */
export function chromeMajor(userAgent: string): number | null {
  const match = /(?:Headless)?Chrome\/(\d{1,4})\./.exec(userAgent);
  return match ? Number(match[1]) : null;
}

function fullVersions(brands: { brand: string; version: string }[], full: string): { brand: string; version: string }[] {
  // GREASE's full version is its major with zeros; the real brands carry the build's.
  return brands.map((b) => ({ brand: b.brand, version: isGrease(b.brand) ? `${b.version}.0.0.0` : full }));
}

/** Chromium's GREASE brands: `Not:A-Brand`, `Not_A Brand`, `Not?A_Brand`, ... */
function isGrease(brand: string): boolean {
  return /^\s?Not.A.Brand$/i.test(brand);
}

/** The host as Chromium's client hints name it. */
function hostPlatform(platform: NodeJS.Platform = process.platform, arch: string = process.arch): Pick<UserAgentMetadata, 'platform' | 'architecture' | 'bitness'> {
  const name = platform === 'darwin' ? 'macOS' : platform === 'win32' ? 'Windows' : 'Linux';
  return { platform: name, architecture: arch.startsWith('arm') ? 'arm' : 'x86', bitness: arch === 'ia32' || arch === 'arm' ? '32' : '64' };
}

/** The user agent Chromium `fullVersion` sends on this host, headed (its reduced form: `Chrome/156.0.0.0`). */
export function plainUserAgent(fullVersion: string, platform: NodeJS.Platform = process.platform, arch: string = process.arch): string {
  const major = Number.parseInt(fullVersion, 10) || 0;
  // The platform tokens Chromium has frozen in its reduced user agent.
  const os =
    platform === 'darwin'
      ? 'Macintosh; Intel Mac OS X 10_15_7'
      : platform === 'win32'
        ? 'Windows NT 10.0; Win64; x64'
        : `X11; Linux ${arch === 'arm64' ? 'aarch64' : 'x86_64'}`;
  return `Mozilla/5.0 (${os}) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/${major}.0.0.0 Safari/537.36`;
}

/** The full version in `chromium --version`'s answer (`Chromium 156.0.8078.108 built on Debian...`), or null. */
export function versionOf(text: string): string | null {
  return /\b(\d{2,4}\.\d+\.\d+\.\d+)\b/.exec(text)?.[1] ?? null;
}

/** The installed Chromium of `fullVersion` (CDP Browser.getVersion's product) as a headed one. */
export function plainIdentity(fullVersion: string): BrowserIdentity {
  const brands = chromiumBrands(Number.parseInt(fullVersion, 10) || 0);
  return {
    userAgent: plainUserAgent(fullVersion),
    metadata: {
      brands,
      fullVersionList: fullVersions(brands, fullVersion),
      // What Chromium on Linux reports itself (platformVersion empty, no model).
      platformVersion: '',
      model: '',
      mobile: false,
      wow64: false,
      ...hostPlatform(),
    },
  };
}

/**
 * The brands of a sec-ch-ua value (`"Chromium";v="130", "Google Chrome";v="130", ...`), in order;
 * null when it is not such a list. Never throws: a header set is data.
 */
export function parseSecChUa(value: string): { brand: string; version: string }[] | null {
  const out: { brand: string; version: string }[] = [];
  const item = /\s*"((?:[^"\\]|\\.)*)"\s*;\s*v\s*=\s*"((?:[^"\\]|\\.)*)"\s*(?:,|$)/y;
  let at = 0;
  while (at < value.length) {
    item.lastIndex = at;
    const match = item.exec(value);
    if (!match || match[0].length === 0) return null;
    out.push({ brand: match[1]!.replace(/\\(.)/g, '$1'), version: match[2]!.replace(/\\(.)/g, '$1') });
    at = item.lastIndex;
  }
  return out.length > 0 ? out : null;
}

/** `"Windows"` → `Windows`; a bare token as it is. */
function unquote(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const match = /^\s*"((?:[^"\\]|\\.)*)"\s*$/.exec(value);
  return (match ? match[1]!.replace(/\\(.)/g, '$1') : value).trim();
}

/** The platform a user agent names, as client hints name it. */
function platformOf(userAgent: string): string {
  if (/Android/.test(userAgent)) return 'Android';
  if (/iPhone|iPad/.test(userAgent)) return 'iOS';
  if (/Mac OS X/.test(userAgent)) return 'macOS';
  if (/Windows/.test(userAgent)) return 'Windows';
  if (/CrOS/.test(userAgent)) return 'Chrome OS';
  return 'Linux';
}

/** A plausible platformVersion per platform (only sent to a site that asks for it by Accept-CH). */
const PLATFORM_VERSIONS: Readonly<Record<string, string>> = { Windows: '15.0.0', macOS: '14.6.1', Android: '14.0.0', 'Chrome OS': '16033.58.0' };

/**
 * The identity of a header set (lower-case names): its user agent and client hints. Brands come
 * from its sec-ch-ua when it parses, else Chrome's for the user agent's major version.
 */
export function identityOfHeaders(headers: Readonly<Record<string, string>>, fallbackUserAgent: string): BrowserIdentity {
  const userAgent = headers['user-agent'] ?? fallbackUserAgent;
  const major = chromeMajor(userAgent);
  const given = headers['sec-ch-ua'] !== undefined ? parseSecChUa(headers['sec-ch-ua']) : null;
  // Hints that name another version than the user agent would be the very mismatch walls look for.
  const agrees = given !== null && given.every((b) => isGrease(b.brand) || Number(b.version) === major);
  const brands = agrees ? given : chromiumBrands(major ?? 0, 'Google Chrome');
  const platform = unquote(headers['sec-ch-ua-platform']) || platformOf(userAgent);
  const mobile = headers['sec-ch-ua-mobile'] !== undefined ? headers['sec-ch-ua-mobile'].trim() === '?1' : /Mobile/.test(userAgent);
  // A reduced user agent says `Chrome/130.0.0.0`: that is all it tells of the build.
  const full = /Chrome\/(\d+\.\d+\.\d+\.\d+)/.exec(userAgent)?.[1] ?? `${major ?? 0}.0.0.0`;
  const arm = platform === 'Android' || platform === 'iOS' || /ARM|aarch64/.test(userAgent);
  return {
    userAgent,
    metadata: {
      brands,
      fullVersionList: fullVersions(brands, full),
      platform,
      platformVersion: PLATFORM_VERSIONS[platform] ?? '',
      architecture: arm ? 'arm' : 'x86',
      model: '',
      mobile,
      bitness: '64',
      wow64: false,
    },
  };
}
