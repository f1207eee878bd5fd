import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config.ts';

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
});
