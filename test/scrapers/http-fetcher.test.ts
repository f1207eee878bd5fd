// The HTTP fetcher (http-fetcher.ts, on wreq-js) against local servers on 127.0.0.1, the contract of
// the two fetchers it replaced: statuses come back as pages (4xx) or as the right failure (5xx as
// upstream; 429 and 403 as blocked with their Retry-After; network, time-out and abort), POST
// bodies and headers travel, redirects stay on their origin and are bounded, the concurrency bound
// holds across html() and json(), and bodies parse as Cheerio over htmlparser2. What it looks like
// on the wire (TLS, HTTP/2, header order, cookies, CAs) is http-fetcher.wire.test.ts's.
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { ExitPool } from '../../src/scrapers/egress/exit-pool.ts';
import { createHttpClients, createHttpFetcher } from '../../src/scrapers/http-fetcher.ts';
import type { PageFetcher } from '../../src/scrapers/types.ts';
import { listen, usePageServers } from './page-server.ts';
import { expectFailure } from './platform-harness.ts';

const { server, other } = usePageServers();
/**
 * The shared fetcher's limit: every request to the local server must succeed within it, on a
 * loaded two-core machine too; the time-out tests wait it out on /hang, which never answers.
 */
const LIMIT_MS = 2_000;
/** Waits on the server's in-flight count: generous, a passing run returns as soon as it holds. */
const SETTLE = { timeout: 15_000 };
let pages: PageFetcher;
beforeAll(() => {
  pages = createHttpFetcher({ concurrency: 4, timeoutMs: LIMIT_MS });
});

describe('answers', () => {
  it('parses an HTML page with cheerio', async () => {
    const page = await pages.html(`${server.url}/html`);
    expect(page.status).toBe(200);
    expect(page.url).toBe(`${server.url}/html`);
    expect(page.body).toBe('<html><body><p class="x">Zürich &amp; <b>Wien</b></p></body></html>');
    expect(page.$('p.x').text()).toBe('Zürich & Wien');
  });

  it('decodes a page in its declared charset', async () => {
    const page = await pages.html(`${server.url}/latin1`);
    expect(page.$('p.x').text()).toBe('Z\u00fcrich');
  });

  it("introduces itself as Chrome 143 (its profile's), with client hints of the same version, not as node", async () => {
    const page = await pages.json(`${server.url}/headers`);
    expect(page.data).toMatchObject({
      'user-agent': expect.stringMatching(/^Mozilla\/5\.0 .*Chrome\/143\.0\.0\.0 Safari\/537\.36$/),
      'sec-ch-ua': expect.stringContaining('"Google Chrome";v="143"'),
      'accept-language': expect.stringContaining('en'),
    });
  });

  it('parses a JSON answer, and leaves data undefined when the body is not JSON', async () => {
    const ok = await pages.json(`${server.url}/json`);
    expect(ok).toMatchObject({ status: 200, url: `${server.url}/json`, data: { ok: true, n: [1, 2] } });
    expect(await pages.json(`${server.url}/bad-json`)).toMatchObject({ status: 200, data: undefined, body: '{"ok": tru' });
    expect(await pages.json(`${server.url}/text`)).toMatchObject({ status: 200, data: undefined, body: 'plain words' });
    expect(await pages.json(`${server.url}/html`)).toMatchObject({ status: 200, data: undefined });
    expect(await pages.json(`${server.url}/empty`)).toMatchObject({ status: 200, data: undefined, body: '' });
  });

  it('gives a non-HTML answer to html() as a page all the same', async () => {
    const page = await pages.html(`${server.url}/json`);
    expect(page.body).toBe('{"ok":true,"n":[1,2]}');
    expect(page.$.root().text()).toBe('{"ok":true,"n":[1,2]}');
  });

  it.each([401, 404, 410])('returns a %i as a page, asked once', async (status) => {
    const before = server.seen.length;
    const page = await pages.html(`${server.url}/status/${status}`);
    expect(page.status).toBe(status);
    expect(page.$('h1').text()).toBe(`status ${status}`);
    expect(server.seen.length - before).toBe(1);
    // A 404 from the JSON side is a page too (with its body, not JSON here).
    expect(await pages.json(`${server.url}/status/${status}`)).toMatchObject({ status, data: undefined, body: `<h1>status ${status}</h1>` });
  });

  it('sends a POST with its JSON body and the caller’s headers, and asks for JSON', async () => {
    const answer = await pages.json(`${server.url}/echo`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-test': 'yes' },
      body: '{"query":"{ event(id: \\"é\\") }"}',
    });
    const echo = answer.data as { method: string; headers: Record<string, string>; body: string };
    expect(echo.method).toBe('POST');
    expect(echo.body).toBe('{"query":"{ event(id: \\"é\\") }"}');
    expect(echo.headers).toMatchObject({ 'content-type': 'application/json', 'x-test': 'yes', accept: expect.stringMatching(/^application\/json/) });
  });

  it('sends a GET without a body, asks html() for HTML, and lets the caller override the accept header', async () => {
    const get = JSON.parse((await pages.html(`${server.url}/echo`)).body) as { method: string; headers: Record<string, string>; body: string };
    expect(get).toMatchObject({ method: 'GET', body: '' });
    expect(get.headers.accept).toMatch(/^text\/html/);
    const own = (await pages.json(`${server.url}/echo`, { headers: { accept: 'text/plain' } })).data as { headers: Record<string, string> };
    expect(own.headers.accept).toBe('text/plain');
  });

  it('sends a POST without a body as an empty one', async () => {
    const echo = (await pages.json(`${server.url}/echo`, { method: 'POST' })).data as { method: string; headers: Record<string, string>; body: string };
    expect(echo).toMatchObject({ method: 'POST', body: '' });
    expect(echo.headers['content-length']).toBe('0');
  });
});

describe('redirects', () => {
  it('follows a redirect on the same origin and reports where it landed', async () => {
    const page = await pages.html(`${server.url}/redirect-here`);
    expect(page.status).toBe(200);
    expect(page.url).toBe(`${server.url}/html`);
    expect(page.$('p.x').length).toBe(1);
  });

  it('follows a 307 with the method and body kept', async () => {
    const echo = (await pages.json(`${server.url}/redirect-post`, { method: 'POST', body: 'kept' })).data;
    expect(echo).toMatchObject({ method: 'POST', body: 'kept' });
  });

  it('follows up to five redirects on the origin, relative and absolute', async () => {
    // /chain/4 is five redirects: 4 → 3 → 2 → 1 → 0 → /html.
    const page = await pages.html(`${server.url}/chain/4`);
    expect(page).toMatchObject({ status: 200, url: `${server.url}/html` });
  });

  it('refuses a sixth redirect, and a redirect loop, as upstream', async () => {
    const before = server.seen.length;
    const failure = await expectFailure(pages.html(`${server.url}/chain/5`), 'upstream');
    expect(failure.message).toMatch(/too many/);
    // Six answers were read (the five redirects followed and the one refused), /html never.
    expect(server.seen.slice(before)).toEqual(['/chain/5', '/chain/4', '/chain/3', '/chain/2', '/chain/1', '/chain/0']);
    await expectFailure(pages.json(`${server.url}/redirect-loop`), 'upstream');
  });

  it('refuses a redirect to another origin as upstream, without asking it', async () => {
    for (const path of ['/redirect-away', '/redirect-other-port']) {
      const failure = await expectFailure(pages.html(`${server.url}${path}`), 'upstream');
      expect(failure.message).toMatch(/another origin/);
      expect(failure.retryable).toBe(true);
    }
    expect(other.hits).toBe(0);
  });

  it('returns a 3xx without a Location as a page', async () => {
    expect((await pages.html(`${server.url}/redirect-nowhere`)).status).toBe(304);
  });
});

describe('failures', () => {
  it.each([500, 502, 503, 599])('fails a %i as upstream (retryable), asked once', async (status) => {
    const before = server.seen.length;
    const failure = await expectFailure(pages.html(`${server.url}/status/${status}`), 'upstream');
    expect(failure.message).toBe(`${server.url}/status/${status} answered ${status}`);
    expect(failure).toMatchObject({ retryable: true, retryAfterMs: null });
    expect(server.seen.length - before).toBe(1);
    await expectFailure(pages.json(`${server.url}/status/${status}`), 'upstream');
  });

  it('fails a 5xx whose JSON body is broken as upstream too', async () => {
    await expectFailure(pages.json(`${server.url}/json-error`), 'upstream');
  });

  it.each([429, 403])('fails a %i as blocked, asked once, with the wait its Retry-After asks for; the next request goes through', async (status) => {
    const before = server.seen.length;
    const seconds = await expectFailure(pages.html(`${server.url}/status/${status}?retry-after=120`), 'blocked');
    expect(seconds).toMatchObject({ retryAfterMs: 120_000, retryable: false });
    expect(seconds.message).toBe(`${server.url}/status/${status}?retry-after=120 answered ${status}, asking us to wait 120 s`);
    expect(server.seen.length - before).toBe(1);
    expect((await expectFailure(pages.json(`${server.url}/status/${status}?retry-after=0`), 'blocked')).retryAfterMs).toBe(0);

    const inFuture = new Date(Date.now() + 60_000).toUTCString();
    const dated = await expectFailure(pages.json(`${server.url}/status/${status}?retry-after=${encodeURIComponent(inFuture)}`), 'blocked');
    // toUTCString drops the milliseconds, and the answer takes a moment.
    expect(dated.retryAfterMs).toBeGreaterThan(55_000);
    expect(dated.retryAfterMs).toBeLessThanOrEqual(60_000);

    const bare = await expectFailure(pages.html(`${server.url}/status/${status}`), 'blocked');
    expect(bare.retryAfterMs).toBeNull();
    expect(bare.message).toBe(`${server.url}/status/${status} answered ${status}, without a Retry-After`);
    expect((await expectFailure(pages.html(`${server.url}/status/${status}?retry-after=soon`), 'blocked')).retryAfterMs).toBeNull();
    expect((await pages.json(`${server.url}/json`)).status).toBe(200);
  });

  it('fails a dropped connection and a refused one as upstream', async () => {
    await expectFailure(pages.html(`${server.url}/drop`), 'upstream');
    // A port nothing listens on (not port 1: fetch refuses the "bad ports" before connecting).
    const { server: gone, url: goneUrl } = await listen(() => {});
    await new Promise<void>((resolve) => gone.close(() => resolve()));
    const failure = await expectFailure(pages.json(`${goneUrl}/nothing`), 'upstream');
    expect(failure.message).toMatch(/Connection refused/);
  });

  it('refuses a body larger than its bound as upstream, declared or not', async () => {
    const declared = await expectFailure(pages.html(`${server.url}/huge-declared`), 'upstream');
    expect(declared.message).toMatch(/more than/);
    // Reading up to the bound takes longer than a short limit on a loaded machine (seen in a full
    // run): the time limit is not what this checks.
    const patient = createHttpFetcher({ concurrency: 1, timeoutMs: 10_000 });
    await expectFailure(patient.html(`${server.url}/huge-chunked`), 'upstream');
    expect((await pages.html(`${server.url}/html`)).status).toBe(200);
  });

  it('gives up on a page that never answers at the time limit, and closes its socket', async () => {
    const started = performance.now();
    const failure = await expectFailure(pages.html(`${server.url}/hang`), 'attempt_timeout');
    expect(failure.message).toBe(`no answer from ${server.url}/hang within ${LIMIT_MS} ms`);
    expect(failure.retryable).toBe(true);
    expect(performance.now() - started).toBeGreaterThanOrEqual(LIMIT_MS - 10);
    // Closed at the limit, not left open until the server goes away.
    expect((await server.hangClosed) - started).toBeLessThan(LIMIT_MS + 5_000);
  });

  it('gives up on a body that is still arriving at the time limit', async () => {
    const quick = createHttpFetcher({ concurrency: 1, timeoutMs: 200 });
    const failure = await expectFailure(quick.html(`${server.url}/slow-body`), 'attempt_timeout');
    expect(failure.message).toMatch(/within 200 ms/);
  });

  it('rejects at once when aborted, and at once when the signal is already aborted', async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 30);
    // A page that never answers and a limit of 8 s: only the abort can end the call early (wreq
    // cancels the request in flight: its HTTP/2 stream is reset).
    const patient = createHttpFetcher({ concurrency: 1, timeoutMs: 8_000 });
    const started = performance.now();
    const failure = await expectFailure(patient.json(`${server.url}/hang`, { signal: controller.signal }), 'attempt_timeout');
    expect(failure.message).toBe(`fetching ${server.url}/hang was aborted`);
    expect(performance.now() - started).toBeLessThan(6_000);
    const before = server.seen.length;
    await expectFailure(pages.html(`${server.url}/html`, { signal: AbortSignal.abort() }), 'attempt_timeout');
    expect(server.seen.length).toBe(before);
  });

  it('rejects as aborted when the caller gives up while the body is arriving', async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 100);
    const failure = await expectFailure(pages.html(`${server.url}/slow-body`, { signal: controller.signal }), 'attempt_timeout');
    expect(failure.message).toMatch(/was aborted/);
  });
});

describe('running', () => {
  it('keeps to its concurrency, across html() and json() together', async () => {
    const narrow = createHttpFetcher({ concurrency: 2, timeoutMs: 5_000 });
    await vi.waitFor(() => expect(server.inFlight.now).toBe(0), SETTLE);
    server.inFlight.max = 0;
    const started = performance.now();
    const answers = await Promise.all(Array.from({ length: 6 }, (_, i) => (i % 2 === 0 ? narrow.html(`${server.url}/slow`) : narrow.json(`${server.url}/slow`))));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200, 200]);
    expect(server.inFlight.max).toBe(2);
    // Three rounds of 200 ms.
    expect(performance.now() - started).toBeGreaterThanOrEqual(580);
  });

  it('frees its slot on every outcome: failures, time-outs and aborts', async () => {
    // The limit counts the wait for the slot: the calls queue behind each other, and all but /hang
    // must be done within it on a loaded machine too.
    const single = createHttpFetcher({ concurrency: 1, timeoutMs: 3_000 });
    const outcomes = await Promise.allSettled([
      single.html(`${server.url}/status/503`),
      single.html(`${server.url}/status/429`),
      single.html(`${server.url}/drop`),
      single.html(`${server.url}/redirect-away`),
      single.html(`${server.url}/slow`, { signal: AbortSignal.timeout(20) }),
      single.json(`${server.url}/bad-json`),
      single.html(`${server.url}/hang`),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(['rejected', 'rejected', 'rejected', 'rejected', 'rejected', 'fulfilled', 'rejected']);
    // The server hears of the hung socket's close a moment after the fetcher gave it up.
    await vi.waitFor(() => expect(server.inFlight.now).toBe(0), SETTLE);
    server.inFlight.max = 0;
    await Promise.all([single.html(`${server.url}/html`), single.json(`${server.url}/json`)]);
    expect(server.inFlight.max).toBe(1);
  });

  it('counts the time a request waits for a free slot against its limit', async () => {
    // /hang never answers, so both calls time out whatever the limit; the limit is long enough
    // for the last /html answer on a loaded machine.
    const single = createHttpFetcher({ concurrency: 1, timeoutMs: 3_000 });
    const hung = single.html(`${server.url}/hang`);
    const queued = single.html(`${server.url}/html`);
    await expectFailure(hung, 'attempt_timeout');
    await expectFailure(queued, 'attempt_timeout');
    // The slot is free again.
    expect((await single.html(`${server.url}/html`)).status).toBe(200);
  });

  it('rejects a call waiting for a slot at once when its caller aborts, and sends nothing for it', async () => {
    const single = createHttpFetcher({ concurrency: 1, timeoutMs: 5_000 });
    const slow = single.html(`${server.url}/wait/1500`);
    const controller = new AbortController();
    const queued = single.html(`${server.url}/echo`, { signal: controller.signal });
    const next = single.html(`${server.url}/html`);
    const before = server.seen.filter((p) => p === '/echo').length;
    let slowDone = false;
    void slow.finally(() => (slowDone = true)).catch(() => {});
    setTimeout(() => controller.abort(), 30);
    const failure = await expectFailure(queued, 'attempt_timeout');
    expect(failure.message).toMatch(/was aborted/);
    // Not when the slot frees, 1.5 s on: the call holding the slot has not answered yet. (An
    // elapsed-time bound under 1.5 s failed on a loaded machine; the order is what it stood for.)
    expect(slowDone).toBe(false);
    // The one behind it still gets its turn, and the aborted call never reached the server.
    expect((await slow).status).toBe(200);
    expect((await next).status).toBe(200);
    expect(server.seen.filter((p) => p === '/echo').length).toBe(before);
  });
});

describe('kept-alive sockets', () => {
  it('sends a request again on a fresh socket when the server closed the reused one under it', async () => {
    // The second request on any socket finds it closed, as when a server's keep-alive timeout
    // ends just as the socket is reused; a first request on a socket is answered.
    const requestsOn = new WeakMap<object, number>();
    const { server, url } = await listen((req, res) => {
      const n = (requestsOn.get(req.socket) ?? 0) + 1;
      requestsOn.set(req.socket, n);
      if (n > 1) return void req.socket.destroy();
      res.writeHead(200, { 'content-type': 'application/json', connection: 'keep-alive' });
      res.end('{"n":1}');
    });
    const fetcher = createHttpFetcher({ concurrency: 1, timeoutMs: 5_000 });
    try {
      for (let i = 0; i < 3; i++) expect(await fetcher.json(`${url}/x`)).toMatchObject({ status: 200, data: { n: 1 } });
    } finally {
      fetcher.close();
      server.close();
    }
  });

  it('does not send again when a first request on a socket is reset: that is the platform failing', async () => {
    let seen = 0;
    const { server, url } = await listen((req) => {
      seen++;
      req.socket.destroy();
    });
    const fetcher = createHttpFetcher({ concurrency: 1, timeoutMs: 5_000 });
    try {
      await expectFailure(fetcher.json(`${url}/x`), 'upstream');
      expect(seen).toBe(1);
    } finally {
      fetcher.close();
      server.close();
    }
  });
});

describe('clients', () => {
  it('keeps one client per session while it lives, drops a retired session\'s, and keeps at most its bound', async () => {
    const clients = createHttpClients({ maxClients: 3 });
    const fetcher = createHttpFetcher({ concurrency: 2, timeoutMs: 5_000, clients });
    const pool = new ExitPool('pf_03', [], { rpsPerExit: 10, sessionMaxRequests: 2, sessionMaxAgeMs: 60_000, cooldownMs: 1_000 });
    try {
      const first = pool.session(pool.exits[0]!);
      await fetcher.json(`${server.url}/json`, { session: first });
      await fetcher.json(`${server.url}/json`, { session: first });
      expect(clients.size).toBe(1);
      // Two requests: the session ages out, and the next one's client replaces its client.
      const second = pool.session(pool.exits[0]!);
      expect(first.retired).toBe(true);
      await fetcher.json(`${server.url}/json`, { session: second });
      expect(clients.size).toBe(1);
      // The origin's default client is one more, another platform's session one more.
      await fetcher.json(`${server.url}/json`);
      const pools = ['pf_04', 'pf_05'].map((p) => new ExitPool(p as 'pf_04', [], { rpsPerExit: 10, sessionMaxRequests: 100, sessionMaxAgeMs: 60_000, cooldownMs: 1_000 }));
      await fetcher.json(`${server.url}/json`, { session: pools[0]!.session(pools[0]!.exits[0]!) });
      expect(clients.size).toBe(3);
      // Past the bound, the least recently used client goes.
      await fetcher.json(`${server.url}/json`, { session: pools[1]!.session(pools[1]!.exits[0]!) });
      expect(clients.size).toBe(3);
    } finally {
      fetcher.close();
      clients.close();
    }
  });
});
