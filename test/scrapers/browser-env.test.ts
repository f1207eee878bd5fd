// Chromium's environment (issue 25: the browser holds no secrets): only what a browser needs to
// run, none of the worker's settings. The real browser's environment, read from /proc:
// test/temporal/worker-roles.test.ts.
import { describe, expect, it } from 'vitest';
import { browserEnvironment } from '../../src/scrapers/browser-env.ts';

describe('browserEnvironment', () => {
  it('passes where programs, home and temporary files are, locale, time zone and fonts; nothing else', () => {
    const env = browserEnvironment({
      PATH: '/usr/bin',
      HOME: '/home/node',
      TMPDIR: '/tmp',
      TZ: 'UTC',
      LANG: 'C.UTF-8',
      LC_ALL: 'C.UTF-8',
      XDG_RUNTIME_DIR: '/run/user/1000',
      FONTCONFIG_PATH: '/etc/fonts',
      DATABASE_URL: 'postgres://ticket_market_scraper:pw@postgres/ticket_market',
      WEBHOOK_SECRET_KEY: 'k',
      STRIPE_SECRET_KEY: 'sk_live_x',
      TEMPORAL_ADDRESS: 'temporal:7233',
      NODE_OPTIONS: '--import tsx',
      UNSET: undefined,
    });
    expect(env).toEqual({
      PATH: '/usr/bin',
      HOME: '/home/node',
      TMPDIR: '/tmp',
      TZ: 'UTC',
      LANG: 'C.UTF-8',
      LC_ALL: 'C.UTF-8',
      XDG_RUNTIME_DIR: '/run/user/1000',
      FONTCONFIG_PATH: '/etc/fonts',
    });
  });
});
