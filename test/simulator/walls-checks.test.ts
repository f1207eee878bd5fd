// The bot walls' checks one by one (src/simulator/walls/): the browser a user agent claims, the
// TLS, HTTP/2 and header checks, the bot cookie's issue, rotation, grace, binding and bounds on a
// made-up clock, a site's wall end to end, and properties: arbitrary headers, user agents, cookie
// values and wire facts never throw and always give a pass or a refusal.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BotCookies, cookieValue } from '../../src/simulator/walls/bot-cookie.ts';
import { browserClaim } from '../../src/simulator/walls/browser-claim.ts';
import { checkHeaders, clientHintBrands, orderBroken, ORDER_RULES } from '../../src/simulator/walls/header-check.ts';
import { checkHttp2 } from '../../src/simulator/walls/http2-check.ts';
import { DEFAULT_WALL_SETTINGS, withSettings } from '../../src/simulator/walls/settings.ts';
import { checkTls } from '../../src/simulator/walls/tls-check.ts';
import { RECENT_REFUSALS, REFUSAL_REASONS, SiteWall, Walls } from '../../src/simulator/walls/wall.ts';
import type { WireFacts } from '../../src/simulator/tls/wire-facts.ts';
import {
  CHROME_UA,
  chromeHeaders,
  chromeWire,
  CURL_UA,
  curlWire,
  FIREFOX_UA,
  firefoxHeaders,
  firefoxWire,
  HEADLESS_UA,
  headerRecord,
  JA4,
  knownInTests,
  nodeWire,
} from '../support/wall-clients.ts';

const chrome = browserClaim(CHROME_UA);
const firefox = browserClaim(FIREFOX_UA);

describe('the browser a user agent claims', () => {
  it.each([
    [CHROME_UA, 'chrome', 142, 'Linux'],
    [HEADLESS_UA, 'chrome', 142, 'Linux'],
    ['Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Edg/131.0.0.0', 'chrome', 131, 'Windows'],
    ['Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36 OPR/110.0.0.0', 'chrome', 124, 'macOS'],
    ['Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/142.0.0.0 Mobile Safari/537.36', 'chrome', 142, 'Android'],
    [FIREFOX_UA, 'firefox', 128, 'Linux'],
    ['Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Safari/605.1.15', 'safari', 18, 'macOS'],
    ['Mozilla/5.0 (iPhone; CPU iPhone OS 18_7 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) CriOS/142.0.0.0 Mobile/15E148 Safari/604.1', 'safari', null, 'iOS'],
  ])('%s is a %s %s on %s', (ua, family, major, os) => {
    expect(browserClaim(ua)).toEqual({ family, major, os });
  });

  it.each([CURL_UA, 'python-requests/2.32.3', 'node', '', undefined, 'Mozilla/5.0', 'Mozilla/5.0 (compatible; Googlebot/2.1)'])('%s names no browser', (ua) => {
    expect(browserClaim(ua)).toBeNull();
  });
});

describe('the TLS check', () => {
  it('passes a Chrome user agent over a Chrome ClientHello (Chromium\'s and impit\'s)', () => {
    expect(checkTls(chromeWire(), chrome, knownInTests)).toBeNull();
    expect(checkTls(chromeWire(undefined, JA4.impitChrome), chrome, knownInTests)).toBeNull();
    expect(checkTls(firefoxWire(), firefox, knownInTests)).toBeNull();
  });

  it('refuses plaintext, a user agent naming no browser, and a ClientHello of another client', () => {
    expect(checkTls({ ...chromeWire(), scheme: 'http', hello: null }, chrome, knownInTests)).toMatch(/did not come over TLS/);
    expect(checkTls(curlWire(), browserClaim(CURL_UA), knownInTests)).toMatch(/names no browser/);
    expect(checkTls(nodeWire(), chrome, knownInTests)).toMatch(/JA4 t13d591000_.* is no chrome's/);
    // A Chrome ClientHello under a Firefox user agent.
    expect(checkTls(chromeWire(), firefox, knownInTests)).toMatch(/no firefox's/);
  });

  it('refuses rather than throws when the list of fingerprints throws', () => {
    expect(checkTls(chromeWire(), chrome, () => { throw new Error('broken list'); })).toMatch(/no chrome's/);
  });
});

describe('the HTTP/2 check', () => {
  it('passes Chrome\'s and Firefox\'s own SETTINGS and pseudo-header order', () => {
    expect(checkHttp2(chromeWire(), chrome)).toBeNull();
    expect(checkHttp2(firefoxWire(), firefox)).toBeNull();
  });

  it('refuses HTTP/1.1, no h2 in ALPN, another client\'s SETTINGS or order, or no browser at all', () => {
    expect(checkHttp2({ ...chromeWire(), httpVersion: '1.1', h2Settings: null, pseudoHeaderOrder: [] }, chrome)).toMatch(/HTTP\/1\.1 where a chrome speaks HTTP\/2/);
    expect(checkHttp2(nodeWire(), chrome)).toMatch(/offers no h2/);
    // impit's Chrome profiles as measured: no HEADER_TABLE_SIZE (Node reports the default 4096).
    expect(checkHttp2({ ...chromeWire(), h2Settings: { enablePush: false, initialWindowSize: 6291456, maxFrameSize: 16384, maxHeaderListSize: 262144 } }, chrome)).toMatch(/SETTINGS headerTableSize undefined, a chrome sends 65536/);
    expect(checkHttp2({ ...chromeWire(), h2Settings: { ...chromeWire().h2Settings, headerTableSize: 4096 } }, chrome)).toMatch(/headerTableSize 4096/);
    expect(checkHttp2({ ...chromeWire(), pseudoHeaderOrder: [':method', ':path', ':authority', ':scheme'] }, chrome)).toMatch(/pseudo-headers in the order :method :path :authority :scheme/);
    expect(checkHttp2(chromeWire(), firefox)).toMatch(/SETTINGS initialWindowSize 6291456, a firefox sends 131072/);
    expect(checkHttp2(curlWire(), null)).toMatch(/names no browser/);
  });

  it('takes both of Safari\'s pseudo-header orders and its two window sizes', () => {
    const safari = browserClaim('Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.1 Safari/605.1.15');
    const wire = (order: string[], window: number): WireFacts => ({ ...chromeWire(), h2Settings: { enablePush: false, maxConcurrentStreams: 100, initialWindowSize: window }, pseudoHeaderOrder: order });
    expect(checkHttp2(wire([':method', ':scheme', ':path', ':authority'], 4194304), safari)).toBeNull();
    expect(checkHttp2(wire([':method', ':scheme', ':authority', ':path'], 2097152), safari)).toBeNull();
    expect(checkHttp2(wire([':method', ':authority', ':scheme', ':path'], 2097152), safari)).toMatch(/pseudo-headers/);
    expect(checkHttp2(wire([':method', ':scheme', ':path', ':authority'], 65535), safari)).toMatch(/initialWindowSize 65535/);
  });
});

describe('the header check', () => {
  const judge = (headers: [string, string][], claim = chrome) => checkHeaders(headerRecord(headers), headers.map(([n]) => n), claim);

  it('passes Chrome\'s navigation, Chrome\'s fetch() order and Firefox\'s', () => {
    expect(judge(chromeHeaders())).toBeNull();
    // Chromium's fetch(): the hints around the user agent, referer before accept-encoding.
    const byName = headerRecord(chromeHeaders());
    const fetchOrder = ['sec-ch-ua-platform', 'user-agent', 'sec-ch-ua', 'sec-ch-ua-mobile', 'accept', 'sec-fetch-site', 'sec-fetch-mode', 'sec-fetch-dest', 'referer', 'accept-encoding', 'accept-language', 'priority'];
    expect(judge(fetchOrder.map((n) => [n, byName[n] ?? 'https://localhost/'] as [string, string]))).toBeNull();
    expect(judge(firefoxHeaders(), firefox)).toBeNull();
  });

  it('refuses HeadlessChrome in the user agent or in sec-ch-ua', () => {
    expect(judge(chromeHeaders(HEADLESS_UA))).toMatch(/HeadlessChrome/);
    const hints = chromeHeaders().map(([n, v]): [string, string] => (n === 'sec-ch-ua' ? [n, '"HeadlessChrome";v="142", "Chromium";v="142"'] : [n, v]));
    expect(judge(hints)).toMatch(/HeadlessChrome/);
  });

  it('refuses Chrome\'s client hints missing or at odds with the user agent', () => {
    const without = (name: string) => chromeHeaders().filter(([n]) => n !== name);
    const replaced = (name: string, value: string) => chromeHeaders().map(([n, v]): [string, string] => (n === name ? [n, value] : [n, v]));
    expect(judge(without('sec-ch-ua'))).toMatch(/no sec-ch-ua from a Chrome/);
    expect(judge(without('sec-ch-ua-mobile'))).toMatch(/no sec-ch-ua-mobile/);
    expect(judge(without('sec-ch-ua-platform'))).toMatch(/no sec-ch-ua-platform/);
    expect(judge(replaced('sec-ch-ua', '"Chromium";v="124", "Google Chrome";v="124"'))).toMatch(/no brand at the user agent's version 142/);
    expect(judge(replaced('sec-ch-ua-platform', '"macOS"'))).toMatch(/sec-ch-ua-platform "macOS" where the user agent says Linux/);
    expect(judge(without('accept-language'))).toBe('no accept-language');
  });

  it('refuses a Firefox that sends client hints, and a request naming no browser', () => {
    expect(judge([...firefoxHeaders(), ['sec-ch-ua', '"Firefox";v="128"']], firefox)).toMatch(/sec-ch-ua sent by a firefox/);
    expect(judge([['user-agent', CURL_UA], ['accept', '*/*']], browserClaim(CURL_UA))).toMatch(/names no browser/);
  });

  it('refuses the orders Chrome never sends', () => {
    const names = chromeHeaders().map(([n]) => n);
    const swap = (a: string, b: string) => names.map((n) => (n === a ? b : n === b ? a : n));
    expect(orderBroken(swap('accept-encoding', 'accept-language'), ORDER_RULES.chrome)).toBe('accept-language before accept-encoding');
    expect(orderBroken(swap('user-agent', 'accept-encoding'), ORDER_RULES.chrome)).toBe('accept-encoding before user-agent');
    expect(orderBroken(swap('sec-fetch-site', 'sec-fetch-dest'), ORDER_RULES.chrome)).toMatch(/sec-fetch/);
    // Node's and most libraries' habit: accept-language early, user agent late.
    expect(orderBroken(['host', 'accept-language', 'accept-encoding', 'user-agent'], ORDER_RULES.chrome)).toBe('accept-encoding before user-agent');
    // Firefox's order under a Chrome user agent, and Chrome's under Firefox's.
    expect(orderBroken(firefoxHeaders().map(([n]) => n), ORDER_RULES.chrome)).not.toBeNull();
    expect(orderBroken(names, ORDER_RULES.firefox)).not.toBeNull();
  });

  it('reads the brands of sec-ch-ua', () => {
    expect(clientHintBrands('"Not:A-Brand";v="8", "Chromium";v="156"')).toEqual([
      { brand: 'Not:A-Brand', version: '8' },
      { brand: 'Chromium', version: '156' },
    ]);
    expect(clientHintBrands('garbage')).toEqual([]);
  });
});

describe('the bot cookie', () => {
  const settings = withSettings(DEFAULT_WALL_SETTINGS, { enabled: true, cookieRotateMs: 1_000, cookieGraceMs: 200, cookieMaxAgeMs: 10_000, cookieIssuesPerAddressPerMinute: 3 });
  const valueOf = (setCookie: string) => setCookie.slice(setCookie.indexOf('=') + 1, setCookie.indexOf(';'));
  const cookieFor = (jar: BotCookies, value: string) => `other=1; ${jar.name}=${value}`;

  it('is issued, kept until due, rotated, the old value taken for the grace and then refused', () => {
    const jar = new BotCookies('cloudflare', '/pf_03');
    const first = jar.judge(undefined, CHROME_UA, '127.0.0.1', true, 0, settings);
    expect(first).toMatchObject({ ok: true });
    if (!first.ok) return;
    expect(first.setCookies[0]).toMatch(/^__cf_bm=[^;]+; Path=\/pf_03; Max-Age=10; HttpOnly; Secure; SameSite=None$/);
    const v1 = valueOf(first.setCookies[0]!);
    expect(jar.judge(cookieFor(jar, v1), CHROME_UA, '127.0.0.1', true, 999, settings)).toEqual({ ok: true, setCookies: [] });
    const rotated = jar.judge(cookieFor(jar, v1), CHROME_UA, '127.0.0.1', true, 1_000, settings);
    if (!rotated.ok) throw new Error('refused');
    const v2 = valueOf(rotated.setCookies[0]!);
    expect(v2).not.toBe(v1);
    // In its grace the old value passes and is told the new one again (parallel requests).
    expect(jar.judge(cookieFor(jar, v1), CHROME_UA, '127.0.0.1', true, 1_200, settings)).toEqual({ ok: true, setCookies: [rotated.setCookies[0]] });
    expect(jar.judge(cookieFor(jar, v1), CHROME_UA, '127.0.0.1', true, 1_201, settings)).toMatchObject({ ok: false, reason: 'cookie_stale' });
    expect(jar.judge(cookieFor(jar, v2), CHROME_UA, '127.0.0.1', true, 1_201, settings)).toEqual({ ok: true, setCookies: [] });
    // Forgotten by a sweep, the old value is still told from a forged one.
    jar.sweep(5_000, settings);
    expect(jar.judge(cookieFor(jar, v1), CHROME_UA, '127.0.0.1', true, 5_000, settings)).toMatchObject({ ok: false, reason: 'cookie_stale' });
    expect(jar.stats()).toMatchObject({ name: '__cf_bm', issued: 1, rotated: 1, remembered: 1 });
  });

  it('refuses a forged value, a value given to another user agent, and a value past its Max-Age', () => {
    const jar = new BotCookies('datadome', '/pf_04');
    const issued = jar.judge(undefined, CHROME_UA, '127.0.0.1', true, 0, settings);
    if (!issued.ok) throw new Error('refused');
    const value = valueOf(issued.setCookies[0]!);
    const tampered = (value.startsWith('a') ? 'b' : 'a') + value.slice(1);
    expect(jar.judge(`datadome=${tampered}`, CHROME_UA, '127.0.0.1', true, 1, settings)).toMatchObject({ ok: false, reason: 'cookie_unknown' });
    expect(jar.judge('datadome=AAAA', CHROME_UA, '127.0.0.1', true, 1, settings)).toMatchObject({ ok: false, reason: 'cookie_unknown' });
    expect(jar.judge(`datadome=${value}`, FIREFOX_UA, '127.0.0.1', true, 1, settings)).toMatchObject({ ok: false, reason: 'cookie_agent' });
    const longLived = withSettings(settings, { cookieRotateMs: 100_000 });
    expect(jar.judge(`datadome=${value}`, CHROME_UA, '127.0.0.1', true, 10_000, longLived)).toMatchObject({ ok: false, reason: 'cookie_stale' });
  });

  it('gives one address at most the bound of new cookies a minute', () => {
    const jar = new BotCookies('perimeterx', '/pf_02');
    for (let i = 0; i < 3; i++) expect(jar.judge(undefined, CHROME_UA, '127.0.0.2', true, i, settings)).toMatchObject({ ok: true });
    expect(jar.judge(undefined, CHROME_UA, '127.0.0.2', true, 3, settings)).toMatchObject({ ok: false, reason: 'cookie_missing' });
    // Another address is not charged; the first is free again a minute later.
    expect(jar.judge(undefined, CHROME_UA, '127.0.0.3', true, 4, settings)).toMatchObject({ ok: true });
    expect(jar.judge(undefined, CHROME_UA, '127.0.0.2', true, 60_001, settings)).toMatchObject({ ok: true });
    expect(jar.judge(undefined, CHROME_UA, '127.0.0.2', true, 60_001, withSettings(settings, { cookieIssuesPerAddressPerMinute: null }))).toMatchObject({ ok: true });
  });

  it('remembers at most its cap, forgetting the oldest', () => {
    const jar = new BotCookies('akamai', '/pf_07', 5);
    const unbounded = withSettings(settings, { cookieIssuesPerAddressPerMinute: null });
    const values: string[] = [];
    for (let i = 0; i < 8; i++) {
      const verdict = jar.judge(undefined, CHROME_UA, '127.0.0.1', true, i, unbounded);
      if (!verdict.ok) throw new Error('refused');
      // Akamai's second cookie comes along, unjudged.
      expect(verdict.setCookies[1]).toMatch(/^bm_sz=/);
      values.push(valueOf(verdict.setCookies[0]!));
    }
    expect(jar.stats()).toMatchObject({ name: '_abck', remembered: 5, evicted: 3 });
    expect(jar.judge(`_abck=${values[0]}`, CHROME_UA, '127.0.0.1', true, 10, unbounded)).toMatchObject({ ok: false, reason: 'cookie_stale' });
    expect(jar.judge(`_abck=${values[7]}`, CHROME_UA, '127.0.0.1', true, 10, unbounded)).toEqual({ ok: true, setCookies: [] });
  });

  it('reads its value out of a Cookie header or several', () => {
    expect(cookieValue('a=1; __cf_bm=xyz; b=2', '__cf_bm')).toBe('xyz');
    expect(cookieValue(['a=1', '__cf_bm=; __cf_bm=second'], '__cf_bm')).toBe('second');
    expect(cookieValue('x__cf_bm=1', '__cf_bm')).toBeNull();
    expect(cookieValue(undefined, '__cf_bm')).toBeNull();
  });
});

describe('a site\'s wall', () => {
  const request = (wire: WireFacts, headers: [string, string][], cookie?: string) => ({ wire, headers: { ...headerRecord(headers), ...(cookie ? { cookie } : {}) }, address: '127.0.0.1' });

  it('runs the checks in order and counts each refusal under its reason', () => {
    const wall = new SiteWall('pf_03', withSettings(DEFAULT_WALL_SETTINGS, { enabled: true }), knownInTests);
    expect(wall.judge(request({ ...chromeWire(), scheme: 'http', hello: null }, chromeHeaders()), 0)).toMatchObject({ pass: false, reason: 'plaintext' });
    expect(wall.judge(request(nodeWire(), [['user-agent', CHROME_UA]]), 0)).toMatchObject({ pass: false, reason: 'tls' });
    expect(wall.judge(request({ ...chromeWire(), httpVersion: '1.1' }, chromeHeaders()), 0)).toMatchObject({ pass: false, reason: 'http2' });
    expect(wall.judge(request(chromeWire(), chromeHeaders(HEADLESS_UA)), 0)).toMatchObject({ pass: false, reason: 'headers' });
    expect(wall.judge(request(chromeWire(), chromeHeaders(), '__cf_bm=forged'), 0)).toMatchObject({ pass: false, reason: 'cookie_unknown' });
    const passed = wall.judge(request(chromeWire(), chromeHeaders()), 0);
    expect(passed).toMatchObject({ pass: true, setCookies: [expect.stringMatching(/^__cf_bm=/)] });
    const stats = wall.stats();
    expect(stats).toMatchObject({ family: 'cloudflare', passed: 1, refused: { plaintext: 1, tls: 1, http2: 1, headers: 1, cookie_unknown: 1, cookie_missing: 0 }, last_refusal: { reason: 'cookie_unknown' } });
    expect(Object.keys(stats.refused)).toEqual([...REFUSAL_REASONS]);
    expect(stats.recent_refusals.map((r) => r.reason)).toEqual(['plaintext', 'tls', 'http2', 'headers', 'cookie_unknown']);
  });

  it(`keeps the last ${RECENT_REFUSALS} refusals with their times, oldest first, and forgets them at a reset`, () => {
    const wall = new SiteWall('pf_03', withSettings(DEFAULT_WALL_SETTINGS, { enabled: true }), knownInTests);
    for (let at = 0; at < RECENT_REFUSALS + 5; at++) wall.judge(request(nodeWire(), [['user-agent', CHROME_UA]]), at * 1000);
    const recent = wall.stats().recent_refusals;
    expect(recent.map((r) => r.at)).toEqual(Array.from({ length: RECENT_REFUSALS }, (_, i) => new Date((i + 5) * 1000).toISOString()));
    expect(recent.every((r) => r.reason === 'tls')).toBe(true);
    wall.reset();
    expect(wall.stats().recent_refusals).toEqual([]);
  });

  it('skips the checks switched off, and lets a Firefox through on its own terms', () => {
    const wall = new SiteWall('pf_02', withSettings(DEFAULT_WALL_SETTINGS, { enabled: true, tls: false, http2: false }), knownInTests);
    expect(wall.judge(request(nodeWire(), chromeHeaders()), 0)).toMatchObject({ pass: true });
    wall.configure({ headers: false, cookie: false, plaintext: false });
    expect(wall.judge(request({ ...nodeWire(), scheme: 'http', hello: null }, [['user-agent', CURL_UA]]), 0)).toEqual({ pass: true, setCookies: [] });
    wall.reset();
    expect(wall.current.tls).toBe(false);
    expect(wall.judge(request(firefoxWire(), firefoxHeaders()), 0)).toMatchObject({ pass: true, setCookies: [expect.stringMatching(/^_px3=/)] });
  });

  it('starts every wall off, all on, or those named with their settings', () => {
    expect(new Walls().site('pf_03').enabled).toBe(false);
    const on = new Walls('on');
    expect(on.site('pf_11').enabled && on.site('marketplace_c').enabled).toBe(true);
    const some = new Walls({ pf_07: { cookieRotateMs: 5 }, pf_08: { enabled: false } });
    expect(some.site('pf_07').current).toMatchObject({ enabled: true, cookieRotateMs: 5, tls: true });
    expect(some.site('pf_08').enabled).toBe(false);
    expect(some.site('pf_07').family).toBe('akamai');
    expect(some.site('marketplace_a').family).toBe('cloudflare');
    expect(some.lookup('_sim')).toBeUndefined();
  });
});

describe('properties', () => {
  const wallFor = () => new SiteWall('pf_04', withSettings(DEFAULT_WALL_SETTINGS, { enabled: true }), knownInTests, 50);
  const headerList = fc.array(fc.tuple(fc.oneof(fc.constantFrom('user-agent', 'sec-ch-ua', 'sec-ch-ua-mobile', 'sec-ch-ua-platform', 'accept-language', 'accept-encoding', 'cookie', 'priority', 'sec-fetch-site'), fc.string()), fc.string({ unit: 'binary' })), { maxLength: 20 });
  const userAgent = fc.oneof(fc.string(), fc.constantFrom(CHROME_UA, HEADLESS_UA, FIREFOX_UA, CURL_UA), fc.string().map((s) => `Mozilla/5.0 (${s}) Chrome/${s}.0 Firefox/${s}.`));
  const wire: fc.Arbitrary<WireFacts> = fc.record({
    scheme: fc.constantFrom('http' as const, 'https' as const),
    hello: fc.option(fc.record({ ja4: fc.oneof(fc.string(), fc.constantFrom(...Object.values(JA4))), ciphers: fc.array(fc.integer()), extensions: fc.array(fc.integer()), alpn: fc.array(fc.string()), sni: fc.option(fc.string()), signatureAlgorithms: fc.array(fc.integer()), tlsVersion: fc.integer() })),
    httpVersion: fc.oneof(fc.constantFrom('1.0', '1.1', '2.0'), fc.string()),
    h2Settings: fc.option(fc.dictionary(fc.string(), fc.oneof(fc.integer(), fc.boolean()))),
    pseudoHeaderOrder: fc.array(fc.string()),
    headerOrder: fc.array(fc.string()),
  });

  it('any headers, user agent, cookie and wire facts give a pass or a refusal with a known reason, never a throw', () => {
    const wall = wallFor();
    fc.assert(
      fc.property(wire, headerList, userAgent, fc.option(fc.string({ unit: 'binary' })), fc.nat(), (facts, list, ua, cookie, at) => {
        const headers: Record<string, string | string[]> = Object.fromEntries(list);
        headers['user-agent'] = ua;
        if (cookie !== null) headers.cookie = [cookie, `datadome=${cookie}`];
        const verdict = wall.judge({ wire: facts, headers, address: '127.0.0.1' }, at);
        if (verdict.pass) expect(Array.isArray(verdict.setCookies)).toBe(true);
        else expect(REFUSAL_REASONS).toContain(verdict.reason);
      }),
      { numRuns: 500 },
    );
  });

  it('a real Chrome request with any extra headers appended still passes the TLS and HTTP/2 checks', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.string(), fc.string())), (extra) => {
        const headers = [...chromeHeaders(), ...extra];
        expect(checkTls(chromeWire(headers), chrome, knownInTests)).toBeNull();
        expect(checkHttp2(chromeWire(headers), chrome)).toBeNull();
      }),
    );
  });

  it('any user agent gives a claim or null, and any sec-ch-ua a list of brands', () => {
    fc.assert(
      fc.property(userAgent, fc.string({ unit: 'binary' }), (ua, hints) => {
        const claim = browserClaim(ua);
        expect(claim === null || ['chrome', 'firefox', 'safari'].includes(claim.family)).toBe(true);
        expect(Array.isArray(clientHintBrands(hints))).toBe(true);
      }),
    );
  });
});
