// The HTTP PageFetcher of every non-browser adapter, on crawlee: two keep-alive crawlers, a
// CheerioCrawler for HTML pages and an HttpCrawler for JSON APIs, started on first use and fed
// one request per call through an in-memory handoff; each call waits for its own request's
// outcome in a map of pending calls keyed by the request's unique key.
//
// A call made with a session (egress/scrape-session.ts) goes out as that session's client, as
// the lean fetcher's do (fetch-pages.ts): through its exit's proxy, chosen per request by
// crawlee's own ProxyConfiguration; with the session's header set in place of got-scraping's
// generated one (a set generated per request would be a new browser every time); with the
// session's cookies, whose jar keeps what every answer sets, redirects included. got-scraping
// speaks HTTP(S) proxies only, so a call through a SOCKS exit fails at once, naming the proxy.
// An answer the platform's challenge-page rule matches (block-pages.ts) is `blocked`. Whatever
// names the proxy in a failure names it by label: its URL holds the credentials.
import { randomUUID } from 'node:crypto';
import { totalmem } from 'node:os';
import { CheerioCrawler } from '@crawlee/cheerio';
import { Configuration, EventManager, Log, LogLevel, ProxyConfiguration, Request, type RequestProvider } from '@crawlee/core';
import { HttpCrawler, type BasicCrawler } from '@crawlee/http';
import { load, type CheerioAPI } from 'cheerio';
import { RequestHandoff } from './request-handoff.ts';
import { blockPageFailure, failureForStatus } from './answer-status.ts';
import type { BlockPageRule } from './block-pages.ts';
import type { ProxyEndpoint } from './egress/proxy-urls.ts';
import type { RequestKind, ScrapeSession } from './egress/scrape-session.ts';
import { ScrapeFailure, type FetchedPage, type FetchInit, type PageFetcher } from './types.ts';

export interface HttpPagesOptions {
  /** Requests in flight at once, per crawler (HTML and JSON each). */
  concurrency: number;
  /** Upper bound of one request, from the call to the last byte (queueing included). */
  timeoutMs: number;
}

export interface HttpPages extends PageFetcher {
  /**
   * Starts both crawlers now rather than on their first request (about 0.1-0.4 s each, once per
   * process), so the first scrape's time limit is not spent on set-up.
   */
  warm(): Promise<void>;
  close(): Promise<void>;
}

type AnswerHeaders = Readonly<Record<string, string | string[] | undefined>>;

interface Answer {
  status: number;
  url: string;
  body: string;
  headers: AnswerHeaders;
  $?: CheerioAPI;
}

interface PendingCall {
  lane: Lane;
  /** The request's own abort: cancels the socket when the caller gives up. */
  controller: AbortController;
  /** The origin redirects may stay on (the adapters' base URL is the only place they fetch). */
  origin: string;
  /** The call's own headers (an adapter's), put on top of the session's on every hop. */
  extra: Record<string, string> | undefined;
  session: ScrapeSession | undefined;
  blockPage: BlockPageRule | undefined;
  settle(outcome: { ok: true; answer: Answer } | { ok: false; failure: ScrapeFailure }): void;
}

/** The got options the hook below sets (useHeaderGenerator is got-scraping's). */
interface GotOptionsSet {
  signal?: AbortSignal | undefined;
  followRedirect?: unknown;
  useHeaderGenerator?: boolean;
  hooks?: unknown;
}

/** What got hands a beforeRedirect hook: the next hop's options, which it may change. */
interface RedirectOptions {
  url: URL | string | undefined;
  headers: Record<string, string | string[] | undefined>;
}

/** Statuses crawlee would otherwise turn into thrown errors: we answer 5xx ourselves, as `upstream`. */
const SERVER_ERRORS = Array.from({ length: 100 }, (_, i) => 500 + i);

/** crawlee's own timers that only feed autoscaling; concurrency is fixed here, so they rarely matter. */
const RARELY_MS = 10 * 60_000;

/**
 * crawlee's events without the local system sampler: that one runs `ps` every second only to
 * scale concurrency, which is fixed here.
 */
class FixedConcurrencyEvents extends EventManager {}

type Lane = 'html' | 'json';

interface LaneState {
  handoff: RequestHandoff;
  crawler: BasicCrawler | null;
  /** Resolves once the crawler's pool asks for work (run()'s set-up is done), or it ended. */
  started: Promise<void>;
  /** Resolves when the crawler's run() has returned. */
  ended: Promise<void>;
}

/**
 * crawlee 3.18 types a `requestManager` option for exactly this, but its option validation
 * rejects it; `requestQueue` takes any object with fetchNextRequest and addRequest, and the
 * crawler only uses the request-manager methods of it.
 */
function asRequestQueue(handoff: RequestHandoff): RequestProvider {
  return handoff as unknown as RequestProvider;
}

function timedOut(error: Error): boolean {
  return error.name === 'TimeoutError' || /timed? ?out/i.test(error.message);
}

/** crawlee files connection errors as "session errors" (a proxy might be to blame); say what happened. */
function reasonOf(error: Error): string {
  return error.message.replace(/^Detected a session error, rotating session\.\.\.\s*/, '').trim();
}

/** `text` with the proxy's URL named by its label, and its secret nowhere. */
function scrub(text: string, proxy: ProxyEndpoint | null | undefined): string {
  if (!proxy) return text;
  const url = new URL(proxy.url);
  let out = text.split(proxy.url).join(proxy.label).split(proxy.url.replace(/\/$/, '')).join(proxy.label);
  // The password; a proxy without one takes a token as its user name.
  const secret = url.password || url.username;
  for (const form of new Set([secret, decodeURIComponent(secret)])) {
    if (form.length > 0) out = out.split(form).join('[redacted]');
  }
  return out;
}

function first(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

export function createHttpPages(options: HttpPagesOptions): HttpPages {
  const timeoutSecs = Math.max(options.timeoutMs, 1) / 1000;
  const pending = new Map<string, PendingCall>();
  const isLive = (request: Request) => pending.has(request.uniqueKey);
  const lanes: Record<Lane, LaneState> = {
    html: { handoff: new RequestHandoff(isLive), crawler: null, started: Promise.resolve(), ended: Promise.resolve() },
    json: { handoff: new RequestHandoff(isLive), crawler: null, started: Promise.resolve(), ended: Promise.resolve() },
  };
  let closed = false;

  // One in-memory configuration for both crawlers: nothing is written to ./storage, and no
  // system sampling. A memory size stated here spares crawlee measuring it with `ps` at start,
  // which fails the whole crawler where there is no `ps` (slim images such as our Dockerfile's).
  const config = new Configuration({
    persistStorage: false,
    purgeOnStart: false,
    storageClientOptions: { persistStorage: false, writeMetadata: false },
    persistStateIntervalMillis: RARELY_MS,
    memoryMbytes: Math.floor(totalmem() / 2 ** 20),
  });
  config.useEventManager(new FixedConcurrencyEvents(config));
  // Every outcome reaches the caller as a page or a ScrapeFailure, and the caller logs it with
  // context; crawlee's own lines would only repeat it, on stdout, through a CLI's output.
  const log = new Log({ level: LogLevel.OFF, prefix: 'http-pages' });

  const shared = {
    keepAlive: true,
    maxRequestRetries: 0,
    maxSessionRotations: 0,
    // No session pool: it would retire "blocked" sessions on 401/403/429 and retry; 403 and 429
    // are settled as `blocked` here and 401 is the adapter's to read, and retries are the caller's.
    useSessionPool: false,
    minConcurrency: options.concurrency,
    maxConcurrency: options.concurrency,
    navigationTimeoutSecs: timeoutSecs,
    requestHandlerTimeoutSecs: timeoutSecs,
    ignoreHttpErrorStatusCodes: SERVER_ERRORS,
    additionalMimeTypes: ['*/*'],
    statusMessageLoggingInterval: RARELY_MS / 1000,
    statisticsOptions: { logIntervalSecs: RARELY_MS / 1000, saveErrorSnapshots: false },
    autoscaledPoolOptions: {
      desiredConcurrency: options.concurrency,
      loggingIntervalSecs: null,
      autoscaleIntervalSecs: RARELY_MS / 1000,
      snapshotterOptions: { eventLoopSnapshotIntervalSecs: RARELY_MS / 1000, clientSnapshotIntervalSecs: RARELY_MS / 1000 },
    },
    log,
    // Asked for every request; a request without a session (or through a direct exit) gets none.
    proxyConfiguration: new ProxyConfiguration({
      newUrlFunction: (_sessionId, opts) => (opts?.request ? (pending.get(opts.request.uniqueKey)?.session?.exit.proxy?.url ?? null) : null),
    }),
    preNavigationHooks: [
      ({ request }: { request: Request }, gotOptions: GotOptionsSet) => {
        const call = pending.get(request.uniqueKey);
        if (!call) throw new Error('the caller has gone');
        gotOptions.signal = call.controller.signal;
        // A redirect may not leave the origin asked for: full-URL event ids are checked
        // against the platform's hosts, and a redirect must not undo that.
        gotOptions.followRedirect = (response: { headers: { location?: string }; url: string }) => {
          const location = response.headers.location;
          return location !== undefined && new URL(location, response.url).origin === call.origin;
        };
        const session = call.session;
        if (!session) return;
        session.sent();
        // The request already carries the session's whole header set; got-scraping would
        // otherwise put a freshly generated browser's headers under every one it lacks.
        gotOptions.useHeaderGenerator = false;
        gotOptions.hooks = {
          // Appended to got-scraping's own. Each hop is a request of the session: it keeps the
          // cookies the redirect set, and the next hop sends the jar's cookies for its URL.
          beforeRedirect: [
            (next: RedirectOptions, response: { url: string; headers: AnswerHeaders }) => {
              session.received(response.url, response.headers['set-cookie']);
              session.sent();
              if (call.extra?.cookie !== undefined || next.url === undefined) return;
              const cookie = session.requestHeaders(call.lane, String(next.url), call.extra).cookie;
              if (cookie === undefined) delete next.headers.cookie;
              else next.headers.cookie = cookie;
            },
          ],
        };
      },
    ],
    failedRequestHandler: ({ request }: { request: Request }, error: Error) => {
      const call = pending.get(request.uniqueKey);
      if (!call) return;
      const proxy = call.session?.exit.proxy;
      // Through a proxy, got's error holds the request's options, proxy URL and credentials
      // included: the failure keeps only what it says, scrubbed.
      const cause = proxy ? Object.assign(new Error(scrub(error.message, proxy)), { name: error.name }) : error;
      const via = proxy ? ` (through ${proxy.label})` : '';
      const failure = timedOut(error)
        ? new ScrapeFailure('attempt_timeout', `no answer from ${request.url}${via} within ${options.timeoutMs} ms`, { cause })
        : // No answer at all through a proxy: the proxy failed (one that cannot reach the platform answers 502 itself).
          new ScrapeFailure('upstream', `fetching ${request.url}${via} failed: ${scrub(reasonOf(error), proxy)}`, { cause, proxyFailed: proxy != null });
      call.settle({ ok: false, failure });
    },
  };

  const answer = (request: Request, response: { statusCode?: number; url?: string; headers: AnswerHeaders }, body: string, $?: CheerioAPI) => {
    const call = pending.get(request.uniqueKey);
    if (!call) return;
    const status = response.statusCode ?? 0;
    const url = response.url ?? request.url;
    const headers = response.headers;
    const proxy = call.session?.exit.proxy;
    if (status === 407 && proxy) {
      // The proxy's answer, not the platform's: for a plain-HTTP target it comes back as a page.
      return call.settle({ ok: false, failure: new ScrapeFailure('upstream', `the proxy ${proxy.label} refused our credentials (407) fetching ${request.url}`, { proxyFailed: true }) });
    }
    call.session?.received(url, headers['set-cookie']);
    // Settled here, like a 5xx, so every adapter reads a refusal the same way and the wait it
    // asks for reaches the caller.
    const retryAfter = first(headers['retry-after']);
    const failure = failureForStatus(request.url, status, retryAfter, Date.now());
    if (failure) return call.settle({ ok: false, failure });
    const wall = call.blockPage?.({ status, headers, body });
    if (wall) return call.settle({ ok: false, failure: blockPageFailure(request.url, wall, retryAfter, Date.now()) });
    call.settle({ ok: true, answer: { status, url, body, headers, $ } });
  };

  const pool = (handoff: RequestHandoff, onAsked: () => void) => ({
    ...shared.autoscaledPoolOptions,
    isTaskReadyFunction: async () => {
      onAsked();
      return !(await handoff.isEmpty());
    },
  });

  const build: Record<Lane, (handoff: RequestHandoff, onAsked: () => void) => BasicCrawler> = {
    html: (handoff, onAsked) =>
      new CheerioCrawler(
        {
          ...shared,
          autoscaledPoolOptions: pool(handoff, onAsked),
          requestQueue: asRequestQueue(handoff),
          requestHandler: ({ request, response, body, $ }) => {
            // `$` exists only for HTML and XML answers; an error page in JSON still has a body.
            answer(request, response, String(body), $ as CheerioAPI | undefined);
          },
        },
        config,
      ) as unknown as BasicCrawler,
    json: (handoff, onAsked) =>
      new HttpCrawler(
        {
          ...shared,
          autoscaledPoolOptions: pool(handoff, onAsked),
          requestQueue: asRequestQueue(handoff),
          requestHandler: ({ request, response, body }) => {
            answer(request, response, String(body));
          },
        },
        config,
      ) as unknown as BasicCrawler,
  };

  /** Starts the lane's crawler if it is not running; a crawler that stopped on its own is replaced. */
  const running = (lane: Lane): BasicCrawler => {
    const state = lanes[lane];
    if (state.crawler) return state.crawler;
    let onAsked = () => {};
    const asked = new Promise<void>((resolve) => (onAsked = resolve));
    const crawler = build[lane](state.handoff, () => onAsked());
    state.crawler = crawler;
    state.ended = crawler.run().then(
      () => crawlerEnded(lane, crawler, null),
      (error: unknown) => crawlerEnded(lane, crawler, error),
    );
    state.started = Promise.race([asked, state.ended]);
    return crawler;
  };

  const crawlerEnded = (lane: Lane, crawler: BasicCrawler, error: unknown) => {
    const state = lanes[lane];
    if (state.crawler !== crawler) return;
    state.crawler = null;
    if (closed) return;
    // keepAlive crawlers only stop on close(), a crash, or crawlee's own SIGINT handling; the
    // calls in flight are lost with it, and the next call starts a fresh crawler.
    const reason = error instanceof Error ? error.message : 'the crawler stopped';
    for (const call of pending.values()) {
      if (call.lane === lane) call.settle({ ok: false, failure: new ScrapeFailure('upstream', `HTTP fetcher (${lane}) stopped: ${reason}`, { cause: error }) });
    }
  };

  const fetchRaw = (lane: Lane, url: string, init: FetchInit = {}, accept: string): Promise<Answer> => {
    if (closed) return Promise.reject(new ScrapeFailure('upstream', 'the HTTP fetcher is closed'));
    const signal = init.signal;
    if (signal?.aborted) return Promise.reject(new ScrapeFailure('attempt_timeout', `fetching ${url} was aborted`));
    // crawlee settles 403 and 429 itself; a caller that needs to read them uses the lean fetcher.
    if (init.readStatuses?.length) return Promise.reject(new Error('the crawlee fetcher cannot hand over statuses to read (readStatuses): use fetch-pages'));
    const session = init.session;
    const proxy = session?.exit.proxy;
    if (proxy?.kind === 'socks') {
      return Promise.reject(new ScrapeFailure('upstream', `fetching ${url} through ${proxy.label} failed: the crawlee fetcher (got-scraping) speaks HTTP proxies only, not SOCKS`));
    }
    const uniqueKey = randomUUID();
    const method = init.method ?? 'GET';
    const request = new Request({
      url,
      uniqueKey,
      method,
      payload: method === 'POST' ? (init.body ?? '') : undefined,
      headers: session ? session.requestHeaders(lane satisfies RequestKind, url, init.headers) : { accept, ...init.headers },
    });

    return new Promise<Answer>((resolve, reject) => {
      const controller = new AbortController();
      const onAbort = () => call.settle({ ok: false, failure: new ScrapeFailure('attempt_timeout', `fetching ${url} was aborted`) });
      const timer = setTimeout(
        () => call.settle({ ok: false, failure: new ScrapeFailure('attempt_timeout', `no answer from ${url} within ${options.timeoutMs} ms`) }),
        options.timeoutMs,
      );
      const call: PendingCall = {
        lane,
        controller,
        origin: new URL(url).origin,
        extra: init.headers,
        session,
        blockPage: init.blockPage,
        settle: (outcome) => {
          if (!pending.delete(uniqueKey)) return;
          clearTimeout(timer);
          signal?.removeEventListener('abort', onAbort);
          if (outcome.ok) return resolve(outcome.answer);
          controller.abort();
          reject(outcome.failure);
        },
      };
      pending.set(uniqueKey, call);
      signal?.addEventListener('abort', onAbort, { once: true });
      const crawler = running(lane);
      lanes[lane].handoff.push(request);
      // The pool polls for work only every half second; tell it now.
      void crawler.autoscaledPool?.notify();
    });
  };

  return {
    async html(url, init) {
      const answer = await fetchRaw('html', url, init, 'text/html,application/xhtml+xml;q=0.9,*/*;q=0.8');
      return { status: answer.status, url: answer.url, body: answer.body, headers: answer.headers, $: answer.$ ?? load(answer.body) } satisfies FetchedPage & { $: CheerioAPI };
    },
    async json(url, init) {
      const answer = await fetchRaw('json', url, init, 'application/json');
      let data: unknown;
      try {
        data = JSON.parse(answer.body);
      } catch {
        data = undefined;
      }
      return { status: answer.status, url: answer.url, body: answer.body, headers: answer.headers, data };
    },
    async warm() {
      if (closed) return;
      running('html');
      running('json');
      await Promise.all([lanes.html.started, lanes.json.started]);
    },
    async close() {
      if (closed) return;
      closed = true;
      for (const call of pending.values()) {
        call.settle({ ok: false, failure: new ScrapeFailure('upstream', 'the HTTP fetcher was closed') });
      }
      await Promise.all(
        Object.values(lanes).map(async (state) => {
          const crawler = state.crawler;
          if (!crawler) return;
          // teardown() aborts the pool, which only exists once run() has set it up.
          await state.started;
          await crawler.teardown();
          await state.ended;
          state.crawler = null;
        }),
      );
    },
  };
}
