// Event ids and regions of spec 2.6: every form each platform accepts, everything it must not,
// and the security rule that a URL may only name the platform's own hosts.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseEventKey, parseEventRef, regionFromHost } from '../../src/platform/event-ref.ts';
import { offersHaveRows, PLATFORM_KEYS, PLATFORMS, ROW_PLATFORMS, type PlatformKey } from '../../src/platform/registry.ts';

const regionFor = (p: PlatformKey) => (p === 'pf_08' ? 'au' : ((PLATFORMS[p].regions as readonly string[] | null)?.[0] ?? 'us'));

describe('parseEventRef', () => {
  it.each(PLATFORM_KEYS)('accepts the registry example of %s', (platform) => {
    const r = parseEventRef(platform, PLATFORMS[platform].event_id_example, regionFor(platform));
    expect(r.ok, JSON.stringify(r)).toBe(true);
  });

  it('extracts the platform key from URLs and keeps bare ids', () => {
    expect(parseEventRef('pf_03', 'https://pf03.example/e/summer-open-air-4411', 'fr')).toMatchObject({ ok: true, ref: { key: 'summer-open-air-4411', host: 'pf03.example' } });
    expect(parseEventRef('pf_04', 'https://www.pf04.example/it/tickets/883120/', 'IT')).toMatchObject({ ok: true, ref: { key: '883120', region: 'it' } });
    expect(parseEventRef('pf_01', 'G5vYZ9fT1aB2cD3e', 'UK')).toMatchObject({ ok: true, ref: { key: 'G5vYZ9fT1aB2cD3e', region: 'uk', host: null } });
    expect(parseEventRef('pf_10', '9b1f3c2e-4d5a-4f6b-8c7d-0e1f2a3b4c5d', 'us')).toMatchObject({ ok: true });
  });

  it('checks regions case-insensitively against the platform list', () => {
    expect(parseEventRef('pf_05', '7730021', 'IT')).toMatchObject({ ok: true, ref: { region: 'it' } });
    expect(parseEventRef('pf_05', '7730021', 'de')).toMatchObject({ ok: false, message: expect.stringContaining('one of it') });
    expect(parseEventRef('pf_03', 'https://pf03.example/e/x', 'not a region')).toMatchObject({ ok: false });
  });

  it('takes pf_08 regions from the URL domain, whatever region was given (issue 24)', () => {
    const domains: [string, string][] = [
      ['pf08.example.com.au', 'au'],
      ['pf08.example.co.nz', 'nz'],
      ['pf08.example.sg', 'sg'],
      ['pf08.example.com.my', 'my'],
      ['pf08.example.co.uk', 'uk'],
      ['pf08.example.com.ph', 'ph'],
    ];
    expect(domains.map(([h]) => h).sort()).toEqual([...PLATFORMS.pf_08.hosts].sort());
    for (const [host, region] of domains) {
      for (const given of [region, region.toUpperCase(), 'au', 'us', 'not a region', '']) {
        expect(parseEventRef('pf_08', `https://${host}/event/AKL-1`, given), `${host} ${given}`).toMatchObject({ ok: true, ref: { region } });
      }
      expect(regionFromHost('pf_08', host)).toBe(region);
    }
    // Only pf_08 takes its region from the domain.
    expect(regionFromHost('pf_07', 'www.pf07.example.co.uk')).toBeNull();
    expect(regionFromHost('pf_01', null)).toBeNull();
  });

  it('says which input it refused', () => {
    expect(parseEventRef('pf_05', 'abc', 'it')).toMatchObject({ ok: false, field: 'event_id' });
    expect(parseEventRef('pf_05', '7730021', 'de')).toMatchObject({ ok: false, field: 'region' });
  });

  it.each([
    ['pf_01', 'G5vYZ9fT1aB2cD3', 'bare id'],
    ['pf_01', 'https://pf01.example/event/G5vYZ9fT1aB2cD3e', 'bare id'],
    ['pf_05', 'abc', 'bare id'],
    ['pf_03', '4411', 'full event URL'],
    ['pf_03', 'https://pf03.example/x/4411', 'path'],
    ['pf_03', 'ftp://pf03.example/e/4411', 'http or https'],
    ['pf_03', 'https://user:pw@pf03.example/e/4411', 'credentials'],
    ['pf_03', 'https://pf03.example:8443/e/4411', 'port'],
    ['pf_03', '', 'empty'],
    ['pf_03', 'https://pf03.exa\nmple/e/42', 'control characters'],
    ['pf_03', 'https://pf03.example/e/42\u0001', 'control characters'],
    ['pf_05', '7730\u000021', 'control characters'],
  ] as const)('rejects %s event id %j (%s)', (platform, id, mention) => {
    const r = parseEventRef(platform, id, regionFor(platform));
    expect(r.ok).toBe(false);
    expect(r.ok ? '' : r.message).toContain(mention);
  });

  it.each([
    'https://127.0.0.1/e/4411',
    'https://localhost/e/4411',
    'https://169.254.169.254/e/4411',
    'https://pf03.example.evil.test/e/4411',
    'https://evilpf03.example/e/4411',
    'https://pf04.example/e/4411',
    'https://[::1]/e/4411',
  ])('SSRF: %s is not a pf_03 host', (url) => {
    const r = parseEventRef('pf_03', url, 'us');
    expect(r).toMatchObject({ ok: false, message: expect.stringContaining('does not belong to pf_03') });
  });

  it('property: any input gives a verdict, and an accepted URL names one of the platform hosts and a path-safe key', () => {
    const platform = fc.constantFrom(...PLATFORM_KEYS);
    const idArb = fc.oneof(
      fc.string({ maxLength: 80 }),
      fc.webUrl({ withQueryParameters: true, withFragments: true }),
      fc.tuple(fc.constantFrom(...PLATFORM_KEYS.flatMap((p) => PLATFORMS[p].hosts)), fc.webPath()).map(([h, p]) => `https://${h}${p}`),
      fc.constantFrom(...PLATFORM_KEYS.map((p) => PLATFORMS[p].event_id_example)),
    );
    fc.assert(
      fc.property(platform, idArb, fc.string({ maxLength: 10 }), (p, id, region) => {
        const r = parseEventRef(p, id, region);
        if (!r.ok) {
          expect(r.message.length).toBeGreaterThan(0);
          return;
        }
        expect(r.ref.key).toMatch(/^[A-Za-z0-9-]{1,100}$/);
        if (r.ref.host !== null) expect(PLATFORMS[p].hosts as readonly string[]).toContain(r.ref.host);
        expect(parseEventKey(p, id)).toMatchObject({ ok: true, key: r.ref.key });
      }),
      { numRuns: 500 },
    );
  });
});

describe('platforms whose offers carry rows', () => {
  it('are the seat-map platforms of spec 2.6, pf_01 and pf_02, and only they', () => {
    expect([...ROW_PLATFORMS].sort()).toEqual(['pf_01', 'pf_02']);
    for (const p of PLATFORM_KEYS) expect(offersHaveRows(p), p).toBe(PLATFORMS[p].sections_type === 'SeatMapSections');
  });
});
