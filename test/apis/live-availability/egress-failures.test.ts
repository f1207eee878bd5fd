// What a customer is told when a scrape's proxy fails (issue 36), all real: the gateway, the
// Temporal server and worker, the simulator, and loopback proxies failing in each way a fetcher
// can meet (test/support/failing-proxies.ts): one refusing our credentials (407), one nobody
// listens on, one whose TLS handshake fails, one that never answers. Each HTTP platform goes out
// through one of them with the HTTP fetcher, and pf_01's browser through three in turn. The answer
// of POST /events/scrape is spec 7.3's status in its `{detail}` envelope and names no proxy: no
// host, port, label, user name or password. The worker's log lines do name them (by label, never
// by credentials), which proves the check reads the real failure, not a text that never had them.
// The HTTP fetcher (http-fetcher.ts) itself, which polls and pf_01's sessions use too, meets the
// same failures below.
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/logger.ts';
import { ExitPool } from '../../../src/scrapers/egress/exit-pool.ts';
import { parseProxyUrls } from '../../../src/scrapers/egress/proxy-urls.ts';
import { createHttpFetcher } from '../../../src/scrapers/http-fetcher.ts';
import { failureDetail } from '../../../src/scrapers/failure-detail.ts';
import { ScrapeFailure } from '../../../src/scrapers/types.ts';
import { marksOf, startFailingProxies, type FailingProxies, type FailingProxy } from '../../support/failing-proxies.ts';
import { clientFor, GATEWAY_ENV } from '../../support/gateway-helpers.ts';
import { newAccount, startTestGateway, type TestGateway } from '../../support/harness.ts';
import { useScrapeStack } from '../../support/scrape-stack.ts';

// The request's limit, short so the silent proxy's 408 comes quickly, yet long enough for pf_01's
// browser to try its three proxies (each a fresh browser context behind a local forwarder: 1-2 s
// alone, 3 s on a loaded two-core machine, where 12 s ran out in a full run).
const TIMEOUT_MS = 18_000;
let proxies: FailingProxies;
const lines: string[] = [];
const log = createLogger(
  'info',
  new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(chunk.toString());
      done();
    },
  }),
);

// Before the stack's own hook: its worker reads SCRAPE_PROXY_URLS when it starts.
beforeAll(async () => {
  proxies = await startFailingProxies();
});

const stack = useScrapeStack({
  timeoutMs: TIMEOUT_MS,
  log,
  env: () => ({
    SCRAPE_PROXY_URLS: [
      `pf_03=${proxies.refusing.url}`,
      `pf_06=${proxies.dead.url}`,
      `pf_10=${proxies.tls.url}`,
      `pf_11=${proxies.silent.url}`,
      `pf_01=${proxies.refusing.url} ${proxies.dead.url} ${proxies.tls.url}`,
    ].join(';'),
  }),
});

let gw: TestGateway;
let api: ReturnType<typeof clientFor>;
let key: string;

beforeAll(async () => {
  gw = await startTestGateway({ env: GATEWAY_ENV, services: { scrapes: stack.runner } });
  api = clientFor(gw.url);
  key = (await newAccount(gw.db, { plan: 'enterprise' })).key;
});
afterAll(async () => {
  await gw?.close();
  await proxies?.close();
});

/** Asserts `text` names none of `through`: no host, port, label, user name or password. */
function namesNone(text: string, through: FailingProxy[]): void {
  for (const p of through) for (const mark of marksOf(p)) expect(text, `${mark} in ${text}`).not.toContain(mark);
  expect(text).not.toMatch(/prox(y|ies)|through/i);
}

/** The worker's log lines about `platform`. */
const logOf = (platform: string) => lines.filter((l) => l.includes(`"platform":"${platform}"`)).join('');

describe('POST /events/scrape through a failing proxy', { timeout: 60_000 }, () => {
  const cases = [
    { what: 'a proxy refusing our credentials (407)', platform: 'pf_03', event_id: 'https://pf03.example/e/egress-407', through: () => [proxies.refusing], status: 500 },
    { what: 'a proxy nobody listens on', platform: 'pf_06', event_id: 'K7h2Lm9Q', through: () => [proxies.dead], status: 500 },
    { what: 'a proxy whose TLS handshake fails', platform: 'pf_10', event_id: '9b1f3c2e-4d5a-4f6b-8c7d-0e1f2a3b4c5d', through: () => [proxies.tls], status: 500 },
    { what: "the browser through pf_01's three failing proxies", platform: 'pf_01', event_id: 'G5vYZ9fT1aB2cD3e', through: () => [proxies.refusing, proxies.dead, proxies.tls], status: 500 },
  ];

  it.each(cases)('$what: $platform answers $status {detail} naming no proxy; the log names it', async ({ platform, event_id, through, status }) => {
    const r = await api('POST', '/events/scrape', { key, body: { platform, event_id, region: 'us' } });
    expect(r.status, `${r.text} ${logOf(platform)}`).toBe(status);
    expect(Object.keys(r.body)).toEqual(['detail']);
    expect(r.body.detail).toMatch(new RegExp(`^${platform} `));
    namesNone(r.text, through());
    // The operators' side: the worker logged what happened, naming the proxy by its label...
    const logged = logOf(platform);
    expect(through().some((p) => logged.includes(p.label)), logged).toBe(true);
    // ...and never its credentials.
    for (const p of through()) expect(logged).not.toContain(p.password);
  });

  it('a proxy that never answers: pf_11 answers 408 {detail} naming no proxy', async () => {
    const before = proxies.silent.connections();
    const r = await api('POST', '/events/scrape', { key, body: { platform: 'pf_11', event_id: 'https://tickets.pf11.example/event/70215', region: 'us' } });
    expect(r.status, r.text).toBe(408);
    expect(Object.keys(r.body)).toEqual(['detail']);
    expect(r.body.detail).toMatch(/^pf_11 took longer than \d+ seconds$/);
    namesNone(r.text, [proxies.silent]);
    // The request did go out through it (and was never answered).
    expect(proxies.silent.connections()).toBeGreaterThan(before);
  });

  it('no answer anywhere names a proxy, and the log never holds a password', () => {
    const all = lines.join('');
    for (const p of proxies.all()) expect(all).not.toContain(p.password);
  });
});

describe('the HTTP fetcher (polls, pf_01 sessions) through a failing proxy', { timeout: 30_000 }, () => {
  it('each failure names its proxy in the message, and its detail names none', async () => {
    const fetcher = createHttpFetcher({ concurrency: 4, timeoutMs: 1_500 });
    const configured = [proxies.refusing, proxies.dead, proxies.tls, proxies.silent];
    const pool = new ExitPool('pf_03', parseProxyUrls(configured.map((p) => p.url).join(',')).pf_03, {
      rpsPerExit: 5,
      sessionMaxRequests: 1_000,
      sessionMaxAgeMs: 600_000,
      cooldownMs: 60_000,
    });
    try {
      for (const [i, p] of configured.entries()) {
        const session = pool.session(pool.exits[i]!);
        const accepted = p.connections();
        const failure = await fetcher.html(`${stack.sim.url}/pf_03/e/egress-lean`, { session }).then(
          () => null,
          (err: unknown) => err,
        );
        expect(failure, p.label).toBeInstanceOf(ScrapeFailure);
        const f = failure as ScrapeFailure;
        // The real text names the proxy (label, or host:port in the raw error); a time-out's
        // names only the URL, and the silent proxy's count shows the request went to it...
        if (p === proxies.silent) expect(p.connections()).toBeGreaterThan(accepted);
        else expect(f.message, p.label).toContain(`127.0.0.1:${p.port}`);
        expect(f.message).not.toContain(p.password);
        // ...and what a customer is told names nothing of it.
        const detail = failureDetail(f, 'pf_03', pool.exits.map((e) => e.proxy!));
        expect(detail).toMatch(/^pf_03 (could not be reached|did not answer in time)$/);
        namesNone(detail, configured);
      }
    } finally {
      fetcher.close();
      pool.close();
    }
  });
});
