import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, marketplaceBaseUrls, platformBaseUrls } from '../src/config.ts';

describe('configuration', () => {
  it('applies documented defaults', () => {
    const c = loadConfig({});
    expect(c.PORT).toBe(8080);
    expect(c.RATE_LIMIT_PER_MINUTE).toBe(30);
    expect(c.DATABASE_URL).toBeUndefined();
    expect(c.DEMO_ACCOUNT).toBe(true);
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
    expect(pf).toMatchObject({ pf_01: 'http://127.0.0.1:8090/pf_01', pf_03: 'https://pf03.example', pf_11: 'http://127.0.0.1:8090/pf_11' });
    expect(marketplaceBaseUrls(config, { MARKETPLACE_B_BASE_URL: 'http://b.example/base/' })).toEqual({
      marketplace_a: 'http://127.0.0.1:8090/marketplace_a',
      marketplace_b: 'http://b.example/base',
    });
    for (const bad of ['not a url', 'ftp://pf.example', 'file:///etc/passwd']) {
      expect(() => platformBaseUrls(config, { PF_07_BASE_URL: bad })).toThrow(/PF_07_BASE_URL: must be an http\(s\) URL/);
      expect(() => marketplaceBaseUrls(config, { MARKETPLACE_A_BASE_URL: bad })).toThrow(/MARKETPLACE_A_BASE_URL: must be an http\(s\) URL/);
    }
  });
});
