// The customer's text of a failed scrape (src/scrapers/failure-detail.ts, issue 36): one sentence
// per kind for what fetchers and infrastructure raise, the adapter's own words for what the
// platform's content said, a failure's own `detail` when it was given one, and never, whatever the
// message or the detail hold, a configured proxy's address, port, label or credentials.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseProxyUrl, type ProxyEndpoint } from '../../src/scrapers/egress/proxy-urls.ts';
import { failureDetail, kindSentence } from '../../src/scrapers/failure-detail.ts';
import { blockedFailure, ScrapeFailure, type ScrapeFailureKind } from '../../src/scrapers/types.ts';

const KINDS: ScrapeFailureKind[] = ['not_found', 'unsupported', 'malformed', 'upstream', 'attempt_timeout', 'blocked', 'browser_missing'];
const PROXY = parseProxyUrl('http://scraper-user:S3cr%40t-pw@10.20.30.40:8123');

describe('failureDetail', () => {
  it('gives each fetcher and infrastructure kind its own sentence, naming the platform', () => {
    expect(failureDetail(new ScrapeFailure('upstream', 'fetching http://x/e/1 (through http://10.20.30.40:8123) failed: connect ECONNREFUSED 10.20.30.40:8123', { proxyFailed: true }), 'pf_06', [PROXY])).toBe(
      'pf_06 could not be reached',
    );
    expect(failureDetail(new ScrapeFailure('upstream', 'http://x/e/1 answered 503', { status: 503 }), 'pf_06')).toBe('pf_06 answered 503');
    expect(failureDetail(new ScrapeFailure('attempt_timeout', 'no answer from http://x/e/1 (through http://10.20.30.40:8123) within 20000 ms'), 'pf_03')).toBe('pf_03 did not answer in time');
    expect(failureDetail(blockedFailure('http://x/e/1', 429, 90_000), 'pf_03')).toBe('pf_03 is refusing our requests for this event for now; try again in 90 s');
    expect(failureDetail(blockedFailure('http://x/e/1', 403, null), 'pf_03')).toBe('pf_03 is refusing our requests for this event for now; try again later');
    expect(failureDetail(new ScrapeFailure('browser_missing', 'no Chromium at /opt/chromium: install it with apt-get install chromium'), 'pf_01')).toBe(
      'pf_01 cannot be scraped right now: the Chromium browser it needs is missing on the server.',
    );
  });

  it("keeps the adapter's words for what the platform's content said", () => {
    const notFound = new ScrapeFailure('not_found', 'pf_06: no such event (the event page answered 404)');
    expect(failureDetail(notFound, 'pf_06', [PROXY])).toBe(notFound.message);
    const malformed = new ScrapeFailure('malformed', 'pf_03: sections[2].price is not a number');
    expect(failureDetail(malformed, 'pf_03', [PROXY])).toBe(malformed.message);
  });

  it('tells a failure its own detail, unless that names a proxy', () => {
    const told = new ScrapeFailure('blocked', 'every proxy of pf_03 (3) refused us lately', { retryAfterMs: 5_000, detail: 'pf_03 is refusing us for now; try again in 5 s' });
    expect(failureDetail(told, 'pf_03', [PROXY])).toBe('pf_03 is refusing us for now; try again in 5 s');
    expect(told.detail).toBe('pf_03 is refusing us for now; try again in 5 s');
    const leaky = new ScrapeFailure('blocked', 'x', { retryAfterMs: 5_000, detail: 'pf_03: the proxy 10.20.30.40:8123 is cooling down' });
    expect(failureDetail(leaky, 'pf_03', [PROXY])).toBe('pf_03 is refusing our requests for this event for now; try again in 5 s');
  });

  it("falls back to the kind's sentence when a content kind's message names a proxy or an address", () => {
    for (const message of ['pf_06: scraper-user answered nonsense', 'pf_06: S3cr@t-pw', 'pf_06: page at 10.20.30.40', 'pf_06: seen through a proxy', 'pf_06: http://a:b@host/x']) {
      expect(failureDetail(new ScrapeFailure('malformed', message), 'pf_06', [PROXY]), message).toBe('pf_06 answered a page that could not be read');
    }
  });

  it('property: no configured proxy address, port, label, user name or password ever reaches the detail', () => {
    const secret = fc.stringMatching(/^[A-Za-z0-9@:%!_.~-]{6,14}$/).map((s) => `${s}9`);
    const host = fc.oneof(
      fc.tuple(fc.integer({ min: 1, max: 223 }), fc.nat(255), fc.nat(255), fc.integer({ min: 1, max: 254 })).map((p) => p.join('.')),
      fc.stringMatching(/^[a-z][a-z0-9-]{3,12}$/).map((s) => `${s}.proxies.example`),
    );
    const proxy = fc
      .record({ scheme: fc.constantFrom('http', 'https', 'socks5'), user: secret, password: secret, host, port: fc.integer({ min: 1024, max: 65_535 }) })
      .map((p) => ({ ...p, endpoint: parseProxyUrl(`${p.scheme}://${encodeURIComponent(p.user)}:${encodeURIComponent(p.password)}@${p.host}:${p.port}`) }));
    const failure = (proxies: { user: string; password: string; host: string; port: number; endpoint: ProxyEndpoint }[]) => {
      const fragment = fc.oneof(
        fc.string({ maxLength: 12 }),
        fc.constantFrom(...proxies.flatMap((p) => [p.endpoint.url, p.endpoint.label, `${p.host}:${p.port}`, p.host, p.user, p.password, encodeURIComponent(p.password), `connect ECONNREFUSED ${p.host}:${p.port}`])),
      );
      const text = fc.array(fragment, { minLength: 1, maxLength: 6 }).map((parts) => parts.join(' '));
      return fc
        .record({
          kind: fc.constantFrom(...KINDS),
          message: text,
          detail: fc.option(text, { nil: undefined }),
          status: fc.option(fc.constantFrom(500, 502, 503, 429, 403), { nil: undefined }),
          retryAfterMs: fc.option(fc.nat(1_800_000), { nil: undefined }),
          proxyFailed: fc.boolean(),
        })
        .map((f) => new ScrapeFailure(f.kind, f.message, { detail: f.detail, status: f.status, retryAfterMs: f.retryAfterMs, proxyFailed: f.proxyFailed }));
    };
    const scenario = fc.array(proxy, { minLength: 1, maxLength: 4 }).chain((proxies) => fc.tuple(fc.constant(proxies), failure(proxies), fc.constantFrom('pf_01', 'pf_03', 'pf_06', 'marketplace_a')));
    fc.assert(
      fc.property(scenario, ([proxies, err, source]) => {
        const detail = failureDetail(err, source, proxies.map((p) => p.endpoint)).toLowerCase();
        for (const p of proxies) {
          for (const mark of [p.endpoint.url, p.endpoint.label, `${p.host}:${p.port}`, p.host, p.user, p.password, encodeURIComponent(p.password), encodeURIComponent(p.user)]) {
            expect(detail, mark).not.toContain(mark.toLowerCase());
          }
        }
        expect(detail).not.toMatch(/\bprox(y|ies)\b/);
      }),
      { numRuns: 500 },
    );
  });

  it("every kind's sentence is tellable as it is", () => {
    for (const kind of KINDS) expect(kindSentence(new ScrapeFailure(kind, 'x', { status: 503 }), 'pf_06')).toMatch(/^pf_06 /);
  });
});
