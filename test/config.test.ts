import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ConfigError, DEFAULT_SCRAPE_RPS, loadConfig, marketplaceBaseUrls, platformBaseUrls, scrapeCaFile, scrapeRpsPerPlatform, simulatorCaFile } from '../src/config.ts';
import { PLATFORM_KEYS } from '../src/platform/registry.ts';
import { makeTestCa } from './support/test-ca.ts';

describe('configuration', () => {
  it('applies documented defaults', () => {
    const c = loadConfig({});
    expect(c.PORT).toBe(8080);
    expect(c.RATE_LIMIT_PER_MINUTE).toBe(30);
    expect(c.DATABASE_URL).toBeUndefined();
    expect(c.DEMO_ACCOUNT).toBe(true);
  });

  it('NODE_ENV=production starts no demo account and no simulator unless asked (issue 25)', () => {
    expect(loadConfig({ NODE_ENV: 'production' })).toMatchObject({ DEMO_ACCOUNT: false, RUN_SIMULATOR: false });
    expect(loadConfig({ NODE_ENV: 'production', DEMO_ACCOUNT: 'true', RUN_SIMULATOR: 'true' })).toMatchObject({ DEMO_ACCOUNT: true, RUN_SIMULATOR: true });
    expect(loadConfig({ NODE_ENV: 'development' })).toMatchObject({ DEMO_ACCOUNT: true, RUN_SIMULATOR: true });
    expect(loadConfig({})).toMatchObject({ DEMO_ACCOUNT: true, RUN_SIMULATOR: true });
  });

  it('stops on a bad value, naming the variable', () => {
    expect(() => loadConfig({ PORT: 'eighty' })).toThrow(ConfigError);
    expect(() => loadConfig({ PORT: 'eighty' })).toThrow(/PORT/);
    expect(() => loadConfig({ KEY_CACHE_TTL_MS: '-1' })).toThrow(/KEY_CACHE_TTL_MS/);
  });

  it('treats empty strings as unset', () => {
    expect(loadConfig({ PORT: '' }).PORT).toBe(8080);
  });

  it('gives every platform and marketplace a base URL: its variable, else the simulator; refuses a non-http(s) one by name', () => {
    const config = { SIM_PORT: 8090 };
    const pf = platformBaseUrls(config, { PF_03_BASE_URL: 'https://pf03.example/' });
    expect(Object.keys(pf)).toHaveLength(11);
    expect(pf).toMatchObject({ pf_01: 'https://127.0.0.1:8090/pf_01', pf_03: 'https://pf03.example', pf_11: 'https://127.0.0.1:8090/pf_11' });
    expect(marketplaceBaseUrls(config, { MARKETPLACE_B_BASE_URL: 'http://b.example/base/' })).toEqual({
      marketplace_a: 'https://127.0.0.1:8090/marketplace_a',
      marketplace_b: 'http://b.example/base',
    });
    for (const bad of ['not a url', 'ftp://pf.example', 'file:///etc/passwd']) {
      expect(() => platformBaseUrls(config, { PF_07_BASE_URL: bad })).toThrow(/PF_07_BASE_URL: must be an http\(s\) URL/);
      expect(() => marketplaceBaseUrls(config, { MARKETPLACE_A_BASE_URL: bad })).toThrow(/MARKETPLACE_A_BASE_URL: must be an http\(s\) URL/);
    }
  });

  it('trusts the CA of the simulator `npm start` runs when a platform is left to it, once written; SCRAPE_CA_FILE first (issue 37)', () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'config-ca-'));
    try {
      const everyUrl = Object.fromEntries([...PLATFORM_KEYS, 'marketplace_a', 'marketplace_b'].map((k) => [`${k.toUpperCase()}_BASE_URL`, `https://${k}.example`]));
      const own = simulatorCaFile({ dataDir });
      expect(own).toBe(path.join(dataDir, 'simulator', 'ca.pem'));
      // Not written yet (no simulator here): nothing to add to the system store.
      expect(scrapeCaFile({ SCRAPE_CA_FILE: undefined, dataDir }, {})).toBeUndefined();
      fs.mkdirSync(path.dirname(own), { recursive: true });
      fs.writeFileSync(own, 'written by the simulator');
      expect(scrapeCaFile({ SCRAPE_CA_FILE: undefined, dataDir }, {})).toBe(own);
      expect(scrapeCaFile({ SCRAPE_CA_FILE: undefined, dataDir }, { ...everyUrl, PF_05_BASE_URL: '' })).toBe(own);
      // Every platform and marketplace elsewhere: the simulator's CA is not trusted.
      expect(scrapeCaFile({ SCRAPE_CA_FILE: undefined, dataDir }, everyUrl)).toBeUndefined();
      expect(scrapeCaFile({ SCRAPE_CA_FILE: '/etc/gateway-ca.pem', dataDir }, {})).toBe('/etc/gateway-ca.pem');
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });

  describe('BILLING_PROVIDER=stripe', () => {
    const stripe = { BILLING_PROVIDER: 'stripe', STRIPE_SECRET_KEY: 'sk_test_abc123', STRIPE_WEBHOOK_SECRET: 'whsec_c2VjcmV0' };
    it('needs the API key and the webhook secret, each named when missing; the local provider needs neither', () => {
      expect(loadConfig({}).BILLING_PROVIDER).toBe('local');
      expect(() => loadConfig({ BILLING_PROVIDER: 'stripe' })).toThrow(/STRIPE_SECRET_KEY: is required when BILLING_PROVIDER=stripe[\s\S]*STRIPE_WEBHOOK_SECRET: is required/);
      expect(() => loadConfig({ ...stripe, STRIPE_WEBHOOK_SECRET: '' })).toThrow(/STRIPE_WEBHOOK_SECRET: is required/);
      const c = loadConfig(stripe);
      expect(c).toMatchObject({ BILLING_PROVIDER: 'stripe', STRIPE_METER_EVENT_NAME: 'api_credits' });
      expect(c.STRIPE_API_BASE).toBeUndefined();
      expect(() => loadConfig({ BILLING_PROVIDER: 'paypal' })).toThrow(/BILLING_PROVIDER/);
    });

    it('refuses a malformed value by name, without echoing a secret', () => {
      const cases: [Record<string, string>, RegExp][] = [
        [{ STRIPE_SECRET_KEY: 'pk_test_publishable' }, /STRIPE_SECRET_KEY: must be a Stripe secret key/],
        [{ STRIPE_WEBHOOK_SECRET: 'secret' }, /STRIPE_WEBHOOK_SECRET: must be a Stripe webhook signing secret/],
        [{ STRIPE_API_BASE: 'ftp://127.0.0.1:12111' }, /STRIPE_API_BASE: must be an http\(s\) URL/],
        [{ STRIPE_API_BASE: 'http://127.0.0.1:12111/v1' }, /STRIPE_API_BASE: must be a bare origin/],
        [{ STRIPE_API_BASE: 'http://user:pw@127.0.0.1:12111' }, /STRIPE_API_BASE: must be a bare origin/],
        [{ STRIPE_METER_EVENT_NAME: 'api credits' }, /STRIPE_METER_EVENT_NAME/],
      ];
      for (const [bad, message] of cases) {
        let error: unknown;
        try {
          loadConfig({ ...stripe, ...bad });
        } catch (err) {
          error = err;
        }
        expect(error, JSON.stringify(bad)).toBeInstanceOf(ConfigError);
        expect((error as Error).message).toMatch(message);
        expect((error as Error).message).not.toContain('publishable');
      }
      expect(loadConfig({ ...stripe, STRIPE_API_BASE: 'http://127.0.0.1:12111' }).STRIPE_API_BASE).toBe('http://127.0.0.1:12111');
    });
  });

  describe('SCRAPE_RPS_PER_PLATFORM', () => {
    const rps = (value?: string) => scrapeRpsPerPlatform(loadConfig(value === undefined ? {} : { SCRAPE_RPS_PER_PLATFORM: value }));
    const every = (n: number) => Object.fromEntries(PLATFORM_KEYS.map((k) => [k, n]));

    it('defaults to 20 requests per second for every platform (also when empty)', () => {
      expect(DEFAULT_SCRAPE_RPS).toBe(20);
      expect(rps()).toEqual(every(20));
      expect(rps('')).toEqual(every(20));
    });

    it('takes one number for every platform, decimals included', () => {
      expect(rps('50')).toEqual(every(50));
      expect(rps(' 0.5 ')).toEqual(every(0.5));
      expect(rps('.25')).toEqual(every(0.25));
    });

    it('takes a list; unlisted platforms get the default', () => {
      expect(rps('pf_03=200,pf_01=5')).toEqual({ ...every(20), pf_03: 200, pf_01: 5 });
      expect(rps(' PF_11 = 2.5 , pf_02=1 ')).toEqual({ ...every(20), pf_11: 2.5, pf_02: 1 });
    });

    it.each([
      ['zero', '0', /positive number/],
      ['a negative rate', '-5', /positive number/],
      ['words', 'fast', /positive number/],
      ['an exponent', '1e3', /positive number/],
      ['an unknown platform', 'pf_03=200,pf_99=5', /unknown platform 'pf_99'/],
      ['a platform listed twice', 'pf_03=1,pf_03=2', /pf_03 is listed twice/],
      ['a rate that is not a positive number', 'pf_03=0', /pf_03: '0' is not a positive number/],
      ['a missing rate', 'pf_03=', /pf_03: '' is not a positive number/],
      ['an entry without a rate', 'pf_03=5,pf_01', /'pf_01' is not platform=rate/],
      ['an empty entry', 'pf_03=5,,pf_01=2', /'' is not platform=rate/],
      ['a bare number in a list', '50,pf_01=5', /'50' is not platform=rate/],
    ])('stops start-up on %s, naming the variable', (_label, value, message) => {
      expect(() => loadConfig({ SCRAPE_RPS_PER_PLATFORM: value })).toThrow(ConfigError);
      expect(() => loadConfig({ SCRAPE_RPS_PER_PLATFORM: value })).toThrow(/SCRAPE_RPS_PER_PLATFORM: /);
      expect(() => loadConfig({ SCRAPE_RPS_PER_PLATFORM: value })).toThrow(message);
    });
  });

  it('SCRAPE_CA_FILE: unset by default; a PEM file of certificates is taken; a missing, empty or broken one stops the start, by name', () => {
    expect(loadConfig({}).SCRAPE_CA_FILE).toBeUndefined();
    const file = makeTestCa().writeCertFile();
    expect(loadConfig({ SCRAPE_CA_FILE: file }).SCRAPE_CA_FILE).toBe(file);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ca-config-'));
    const write = (name: string, text: string) => (fs.writeFileSync(path.join(dir, name), text), path.join(dir, name));
    const broken = write('broken.pem', '-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n');
    for (const bad of [path.join(dir, 'absent.pem'), write('empty.pem', ''), write('key.pem', '-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n'), broken]) {
      expect(() => loadConfig({ SCRAPE_CA_FILE: bad }), bad).toThrow(ConfigError);
      expect(() => loadConfig({ SCRAPE_CA_FILE: bad }), bad).toThrow(/SCRAPE_CA_FILE/);
    }
    // Whatever a file holds, the check answers with a ConfigError or the path: it never crashes.
    fc.assert(
      fc.property(fc.string({ maxLength: 400 }), fc.boolean(), (body, framed) => {
        const text = framed ? `-----BEGIN CERTIFICATE-----\n${body}\n-----END CERTIFICATE-----\n` : body;
        const f = write('any.pem', text);
        try {
          expect(loadConfig({ SCRAPE_CA_FILE: f }).SCRAPE_CA_FILE).toBe(f);
        } catch (err) {
          expect(err).toBeInstanceOf(ConfigError);
        }
      }),
      { numRuns: 200 },
    );
  });
});
