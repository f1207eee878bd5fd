// SCRAPE_PROXY_URLS parsing (egress/proxy-urls.ts) and its check at start-up (config.ts): every
// platform's list, the groups, and errors that name a proxy by its label, never its password.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { loadConfig, scrapeRpsPerExit } from '../../src/config.ts';
import { PLATFORM_KEYS } from '../../src/platform/registry.ts';
import { parseProxyUrls, proxyLabel } from '../../src/scrapers/egress/proxy-urls.ts';

const labels = (list: readonly { label: string }[]) => list.map((p) => p.label);

describe('SCRAPE_PROXY_URLS', () => {
  it('is direct for every platform when unset or empty', () => {
    for (const text of [undefined, '', '  ']) for (const k of PLATFORM_KEYS) expect(parseProxyUrls(text)[k]).toEqual([]);
  });

  it('gives one list to every platform, separated by commas or spaces', () => {
    const out = parseProxyUrls('http://u:p@10.0.0.1:8000, http://10.0.0.2:8001 socks5://10.0.0.3:1080');
    for (const k of PLATFORM_KEYS) expect(labels(out[k])).toEqual(['http://10.0.0.1:8000', 'http://10.0.0.2:8001', 'socks5://10.0.0.3:1080']);
    expect(out.pf_03[0]!.url).toBe('http://u:p@10.0.0.1:8000/');
    expect(out.pf_03[2]!.kind).toBe('socks');
  });

  it('gives groups to the platforms they name, and * to the rest', () => {
    const out = parseProxyUrls('pf_03,pf_08=http://a.example:8000 http://b.example:8000; pf_01=https://c.example:443;*=http://d.example:3128');
    expect(labels(out.pf_03)).toEqual(['http://a.example:8000', 'http://b.example:8000']);
    expect(labels(out.pf_08)).toEqual(labels(out.pf_03));
    expect(labels(out.pf_01)).toEqual(['https://c.example:443']);
    expect(labels(out.pf_05)).toEqual(['http://d.example:3128']);
  });

  it("names the tracker's marketplaces like platforms, and gives them * too", () => {
    const out = parseProxyUrls('marketplace_a=http://m.example:8000;*=http://d.example:3128');
    expect(labels(out.marketplace_a)).toEqual(['http://m.example:8000']);
    expect(labels(out.marketplace_b)).toEqual(['http://d.example:3128']);
    expect(labels(out.pf_01)).toEqual(['http://d.example:3128']);
  });

  it('leaves platforms no group names direct when there is no * group', () => {
    const out = parseProxyUrls('pf_03=http://a.example:8000');
    expect(out.pf_05).toEqual([]);
  });

  it.each([
    ['pf_99=http://a:1', /unknown platform/],
    ['pf_03=http://a:1;pf_03=http://b:1', /more than one group/],
    ['http://a:1;*=http://b:1', /more than one group is for every platform/],
    ['ftp://a:1', /a proxy must be/],
    ['pf_03=', /lists no proxy/],
    ['http://a:1,http://a:1', /listed twice/],
    ['http://a:1/some/path', /no path/],
    ['not a url', /could not be parsed/],
  ])('refuses %j', (text, message) => {
    expect(() => parseProxyUrls(text)).toThrow(message);
  });

  it('never repeats a password in an error or a label', () => {
    fc.assert(
      fc.property(fc.stringMatching(/^[A-Za-z0-9]{6,16}$/), fc.constantFrom('ftp', 'http', 'socks5'), fc.constantFrom('', '/path', ' junk'), (password, scheme, tail) => {
        const text = `${scheme}://user:${password}@proxy.example:8000${tail}`;
        let shown: string;
        try {
          shown = JSON.stringify(parseProxyUrls(text).pf_03.map((p) => p.label));
        } catch (err) {
          shown = (err as Error).message;
        }
        expect(shown).not.toContain(password);
      }),
    );
    expect(proxyLabel(new URL('http://u:secret@h:1'))).toBe('http://h:1');
  });

  it('is checked at start-up, and each proxy gets SCRAPE_RPS_PER_PROXY (else the platform rate)', () => {
    let message = '';
    try {
      loadConfig({ SCRAPE_PROXY_URLS: 'http://user:hunter2hunter2@a:1/x' });
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toContain('SCRAPE_PROXY_URLS');
    expect(message).not.toContain('hunter2hunter2');
    const rps = scrapeRpsPerExit(loadConfig({ SCRAPE_PROXY_URLS: 'pf_03=http://a:1', SCRAPE_RPS_PER_PLATFORM: '30', SCRAPE_RPS_PER_PROXY: 'pf_03=4.5' }));
    expect(rps.pf_03).toBe(4.5);
    // A direct platform keeps the one address's rate.
    expect(rps.pf_05).toBe(30);
    expect(scrapeRpsPerExit(loadConfig({ SCRAPE_PROXY_URLS: 'pf_03=http://a:1', SCRAPE_RPS_PER_PLATFORM: '30' })).pf_03).toBe(30);
  });
});
