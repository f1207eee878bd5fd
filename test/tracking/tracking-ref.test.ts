// What POST /svc/data/events/add accepts as an event (src/market-data/tracking-ref.ts): bare ids
// in each marketplace's form, and URLs only on the marketplace's public hosts or below its
// configured base URL; everything else (other hosts, internal addresses, ports, credentials,
// other paths) is refused with a message.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, marketplaceBaseUrls } from '../../src/config.ts';
import { marketplaceAEventNumber, parseTrackTarget, trackingWorkflowId } from '../../src/market-data/tracking-ref.ts';

const BASE_A = 'http://127.0.0.1:8090/marketplace_a';
const BASE_B = 'http://127.0.0.1:8090/marketplace_b';

describe('event ids', () => {
  it.each([
    ['marketplace_a', 'E-104729', 'E-104729'],
    ['marketplace_a', '  E-1  ', 'E-1'],
    ['marketplace_b', '0B005F2A9B1E4D2C', '0B005F2A9B1E4D2C'],
    ['marketplace_b', 'vvG1zZ9KkQ', 'vvG1zZ9KkQ'],
  ] as const)('%s takes %j', (marketplace, id, expected) => {
    expect(parseTrackTarget(marketplace, { event_id: id }, BASE_A)).toEqual({ ok: true, marketplace, id: expected });
  });

  it.each([
    ['marketplace_a', '104729'],
    ['marketplace_a', 'E-0'],
    ['marketplace_a', 'E-01'],
    ['marketplace_a', 'E-1234567890123456'],
    ['marketplace_a', 'e-12'],
    ['marketplace_b', 'short'],
    ['marketplace_b', '0B005F2A-9B1E'],
    ['marketplace_b', ''],
  ] as const)('%s refuses %j', (marketplace, id) => {
    const r = parseTrackTarget(marketplace, { event_id: id }, BASE_A);
    expect(r.ok).toBe(false);
  });

  it('points a URL sent as event_id at the url field', () => {
    const r = parseTrackTarget('marketplace_a', { event_id: 'https://www.marketplace-a.example/event/E-1' }, BASE_A);
    expect(r).toEqual({ ok: false, message: expect.stringMatching(/send a URL in `url`/) });
  });

  it('keeps A’s catalog number exact and names one workflow per event', () => {
    expect(marketplaceAEventNumber('E-999999999999')).toBe(999_999_999_999);
    // 10^12 and above is where events known only from marketplace B are numbered.
    expect(marketplaceAEventNumber('E-1000000000000')).toBeNull();
    expect(parseTrackTarget('marketplace_a', { event_id: 'E-1000000000000' }, BASE_A).ok).toBe(false);
    expect(marketplaceAEventNumber('X-1')).toBeNull();
    expect(trackingWorkflowId('marketplace_b', 'ABCDEF1234')).toBe('track:marketplace_b:ABCDEF1234');
  });
});

describe('event URLs', () => {
  it.each([
    ['marketplace_a', 'https://www.marketplace-a.example/event/E-104729', 'E-104729'],
    ['marketplace_a', 'http://marketplace-a.example/aurora-skies-london/event/E-7/?ref=x#top', 'E-7'],
    ['marketplace_a', `${BASE_A}/event/E-55`, 'E-55'],
    ['marketplace_b', 'https://www.marketplace-b.example/aurora-skies-london-14-05-2027/event/0B005F2A9B1E4D2C', '0B005F2A9B1E4D2C'],
    ['marketplace_b', `${BASE_B}/event/ABCDEF1234`, 'ABCDEF1234'],
  ] as const)('%s takes %s', (marketplace, url, id) => {
    expect(parseTrackTarget(marketplace, { url }, marketplace === 'marketplace_a' ? BASE_A : BASE_B)).toEqual({ ok: true, marketplace, id });
  });

  it.each([
    ['another host', 'https://evil.example/event/E-1', /host 'evil.example'/],
    ['an internal address', 'http://169.254.169.254/event/E-1', /host/],
    ['localhost', 'http://localhost/event/E-1', /host/],
    ['the simulator on another port', 'http://127.0.0.1:8091/marketplace_a/event/E-1', /host/],
    ['the simulator outside the base path', 'http://127.0.0.1:8090/pf_03/event/E-1', /host/],
    ['the base URL as a prefix only', 'http://127.0.0.1:8090/marketplace_abc/event/E-1', /host/],
    ['a public host with a port', 'https://www.marketplace-a.example:8443/event/E-1', /host/],
    ['a look-alike host', 'https://www.marketplace-a.example.evil.example/event/E-1', /host/],
    ['credentials', 'https://user:pw@www.marketplace-a.example/event/E-1', /credentials/],
    ['another scheme', 'file:///etc/passwd', /http or https/],
    ['B’s host for an A event', 'https://www.marketplace-b.example/event/E-1', /host/],
    ['another path', 'https://www.marketplace-a.example/artist/aurora-skies', /path/],
    ['not a URL', 'www.marketplace-a.example/event/E-1', /full event URL/],
    ['spaces inside', 'https://www.marketplace-a.example/event/E-1 x', /spaces/],
  ])('refuses %s', (_label, url, message) => {
    const r = parseTrackTarget('marketplace_a', { url }, BASE_A);
    expect(r).toEqual({ ok: false, message: expect.stringMatching(message) });
  });

  it('takes a valid event path exactly on A’s public origins and the base URL’s origin; any other host is refused for its host', () => {
    // The origins A's event pages may come from: A's public hosts on their default ports, and
    // the configured base URL's origin (scheme, host and port).
    const allowed = new Set([
      'https://www.marketplace-a.example',
      'http://www.marketplace-a.example',
      'https://marketplace-a.example',
      'http://marketplace-a.example',
      'http://127.0.0.1:8090',
    ]);
    const basePath = new URL(BASE_A).pathname;
    const aHosts = fc.constantFrom('www.marketplace-a.example', 'marketplace-a.example', 'WWW.Marketplace-A.example');
    const lookAlike = fc
      .tuple(
        fc.constantFrom('', 'x', 'evil.', 'www.', 'www-'),
        fc.constantFrom('www.marketplace-a.example', 'marketplace-a.example', 'marketplace-b.example', 'marketplace-a.examples', 'marketplace-a'),
        fc.constantFrom('', '.', '.evil.example', '-x', '.example'),
      )
      .map(([pre, host, post]) => pre + host + post);
    const host = fc.oneof(aHosts, lookAlike, fc.domain(), fc.ipV4(), fc.constantFrom('127.0.0.1', 'localhost', '[::1]', '169.254.169.254'));
    const port = fc.oneof(fc.constantFrom(80, 443, 8090, 8091), fc.integer({ min: 1, max: 65_535 }));
    const authority = fc.oneof(
      host,
      fc.tuple(host, port).map(([h, p]) => `${h}:${p}`),
      // The base URL's host on its own port and on others.
      port.map((p) => `127.0.0.1:${p}`),
    );
    let accepted = 0;
    let refused = 0;
    fc.assert(
      fc.property(fc.constantFrom('http', 'https'), authority, (scheme, auth) => {
        // The path is always a valid event path for that host: below the base path on the base
        // URL's host, at the root elsewhere; only the scheme, host and port vary.
        const path = auth.startsWith('127.0.0.1') ? `${basePath}/event/E-1` : '/event/E-1';
        const url = `${scheme}://${auth}${path}`;
        const parsed = new URL(url);
        const r = parseTrackTarget('marketplace_a', { url }, BASE_A);
        if (allowed.has(parsed.origin)) {
          accepted++;
          expect(r, url).toEqual({ ok: true, marketplace: 'marketplace_a', id: 'E-1' });
        } else {
          refused++;
          const named = `${parsed.hostname}${parsed.port ? `:${parsed.port}` : ''}`;
          expect(r, url).toEqual({ ok: false, message: `url host '${named}' is not marketplace_a's (expected www.marketplace-a.example or marketplace-a.example)` });
        }
      }),
      { numRuns: 500 },
    );
    // Both sides of the property ran.
    expect(accepted).toBeGreaterThan(0);
    expect(refused).toBeGreaterThan(0);
  });
});

describe('configuration', () => {
  it('scrapes the simulator by default, or the configured base URLs; a bad one names its variable', () => {
    // The simulator over HTTPS, as a real marketplace is reached (issue 37).
    expect(marketplaceBaseUrls({ SIM_PORT: 8090 }, {})).toEqual({ marketplace_a: 'https://127.0.0.1:8090/marketplace_a', marketplace_b: 'https://127.0.0.1:8090/marketplace_b' });
    expect(marketplaceBaseUrls({ SIM_PORT: 8090 }, { MARKETPLACE_B_BASE_URL: 'https://b.internal.example/api/' }).marketplace_b).toBe('https://b.internal.example/api');
    expect(() => marketplaceBaseUrls({ SIM_PORT: 8090 }, { MARKETPLACE_A_BASE_URL: 'ftp://x' })).toThrow(ConfigError);
    expect(() => marketplaceBaseUrls({ SIM_PORT: 8090 }, { MARKETPLACE_A_BASE_URL: 'ftp://x' })).toThrow(/MARKETPLACE_A_BASE_URL/);
  });

  it('tracks every 60 s by default, and never more often than every 200 ms', () => {
    expect(loadConfig({}).TRACK_INTERVAL_MS).toBe(60_000);
    expect(loadConfig({ TRACK_INTERVAL_MS: '500' }).TRACK_INTERVAL_MS).toBe(500);
    expect(() => loadConfig({ TRACK_INTERVAL_MS: '50' })).toThrow(/TRACK_INTERVAL_MS/);
  });
});
