// The fetchers a scrape is given (scrape-via.ts, issue 36): every call carries the scrape's
// session, signal and challenge page, whatever the adapter passes, and the adapter's init has no
// way to name them. The `@ts-expect-error` lines are the type check's half of this test: `tsc`
// fails the build if any of them compiles.
import { describe, expect, it } from 'vitest';
import { ExitPool } from '../../src/scrapers/egress/exit-pool.ts';
import { parseProxyUrl } from '../../src/scrapers/egress/proxy-urls.ts';
import { noBlockPage, cloudflareChallenge } from '../../src/scrapers/block-pages.ts';
import { bindBrowser, bindFetcher, scrapeVia } from '../../src/scrapers/scrape-via.ts';
import type { PageOpener, FetchInit, PageFetcher, ScrapeFetchInit } from '../../src/scrapers/types.ts';

/** A fetcher that answers nothing and records what it was asked with. */
function recorder(): { http: PageFetcher; calls: FetchInit[] } {
  const calls: FetchInit[] = [];
  const answer = (init?: FetchInit) => {
    calls.push(init ?? {});
    return Promise.resolve({ status: 200, url: 'http://x/', body: '', data: undefined, $: undefined as never });
  };
  return { http: { html: (_url, init) => answer(init), json: (_url, init) => answer(init) }, calls };
}

const pool = new ExitPool('pf_03', [parseProxyUrl('http://u:p@127.0.0.1:9'), parseProxyUrl('http://u:p@127.0.0.1:10')], { rpsPerExit: 1, sessionMaxRequests: 10, sessionMaxAgeMs: 60_000, cooldownMs: 1_000 });

describe('a scrape\'s bound fetchers', () => {
  it('send every request with the scrape\'s session, signal and challenge page, and the adapter\'s own fields', async () => {
    const { http, calls } = recorder();
    const session = pool.session(pool.exits[0]!);
    const signal = new AbortController().signal;
    const bound = bindFetcher(http, { session, signal, blockPage: cloudflareChallenge });
    await bound.json('http://x/a', { method: 'POST', headers: { 'x-a': '1' }, body: '{}', readStatuses: [403] });
    await bound.html('http://x/b');
    expect(calls).toEqual([
      { method: 'POST', headers: { 'x-a': '1' }, body: '{}', readStatuses: [403], session, signal, blockPage: cloudflareChallenge },
      { method: undefined, headers: undefined, body: undefined, readStatuses: undefined, session, signal, blockPage: cloudflareChallenge },
    ]);
  });

  it('let nothing an adapter smuggles past the types choose or drop the session', async () => {
    const { http, calls } = recorder();
    const session = pool.session(pool.exits[0]!);
    const bound = bindFetcher(http, { session, signal: undefined, blockPage: noBlockPage });
    const wider: FetchInit = { session: pool.session(pool.exits[1]!), blockPage: undefined, signal: AbortSignal.abort() };
    await bound.json('http://x/', wider as unknown as ScrapeFetchInit);
    expect(calls[0]).toMatchObject({ session, signal: undefined, blockPage: noBlockPage });
  });

  it('without a session send as before: no session, the caller\'s signal', async () => {
    const { http, calls } = recorder();
    const via = scrapeVia({ http, browser: { withPage: () => Promise.reject(new Error('unused')) } }, { session: undefined, signal: undefined, blockPage: noBlockPage });
    await via.http.json('http://x/');
    expect(calls[0]).toMatchObject({ session: undefined, signal: undefined });
    expect(via.clearances).toBeUndefined();
  });

  it('open browser pages through the scrape\'s session', async () => {
    const seen: unknown[] = [];
    const browser: PageOpener = { withPage: (_url, _use, options) => (seen.push(options), Promise.resolve(undefined as never)) };
    const session = pool.session(pool.exits[0]!);
    await bindBrowser(browser, { session, signal: undefined, blockPage: cloudflareChallenge }).withPage('http://x/', () => Promise.resolve(1));
    expect(seen).toEqual([{ session, signal: undefined, blockPage: cloudflareChallenge }]);
  });

  it('take no session, signal or challenge page from an adapter (checked by tsc)', () => {
    const bound = bindFetcher(recorder().http, { session: undefined, signal: undefined, blockPage: noBlockPage });
    const session = pool.session(pool.exits[0]!);
    const init: FetchInit = { session };
    // @ts-expect-error an adapter cannot pick a session
    void bound.json('http://x/', { session });
    // @ts-expect-error nor pass on a FetchInit that carries one
    void bound.json('http://x/', init);
    // @ts-expect-error nor set its own signal
    void bound.html('http://x/', { signal: AbortSignal.abort() });
    // @ts-expect-error nor its own challenge page
    void bound.html('http://x/', { blockPage: noBlockPage });
  });
});
