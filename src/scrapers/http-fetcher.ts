// The one HTTP PageFetcher of the scrapers (issue 37): polls, on-demand scrapes, the tracker's
// marketplace fetches and pf_01's data requests all go through it, on wreq-js (Rust wreq over
// BoringSSL) with Chrome 143's profile, so every request is a browser's on the wire: its TLS
// ClientHello, HTTP/2 with Chrome's SETTINGS, window and pseudo-header order, and Chrome's headers
// in Chrome's order (egress/chrome-identity.ts). Node's own client (59 cipher suites, no ALPN)
// under a Chrome user agent is the mismatch bot walls block first; impit, the client before, had
// neither Chrome's signature algorithms nor its HTTP/2 SETTINGS (chrome-identity.ts says more).
//
// One wreq transport (connection pool, proxy, TLS and HTTP/2 emulation) per client identity, as a
// browser is one: a scrape session's (its exit's proxy, its header set, its cookie jar:
// egress/scrape-session.ts), or, for a request made without a session, its origin's default client,
// with an identity and a jar of its own, so the cookies a platform sets are kept and sent in the
// direct mode too. Cookies are kept here, not by wreq (each request is wreq-ephemeral: its own
// store starts empty and is dropped): every answer's Set-Cookie (redirects included) goes into the
// identity's jar, and every request sends the jar's current value, so a cookie the platform rotates
// replaces the old one. Headers are ours only, in our order (disableDefaultHeaders). Clients are kept
// while their session lives, at most `maxClients` of them (the least recently used beyond that is
// closed once its requests in flight are done).
//
// The contract, as the two fetchers it replaces had it: the same failures for the same answers
// (answer-status.ts), `readStatuses` handed back to the caller, redirects only within the origin
// asked for, a bound on time (queueing included) and on size, an answer the platform's challenge
// page rule matches is `blocked` (block-pages.ts), and Cheerio over htmlparser2 for HTML. A proxy
// that fails is named by label in the message, never by its URL (which holds its credentials).
import { load } from 'cheerio';
import { createTransport, fetch as wreqFetch, type Response as WreqAnswer, type Transport } from 'wreq-js';
import { blockPageFailure, failureForStatus } from './answer-status.ts';
import { CHROME_PROFILE, chromeHeaderSet, emulationOs, onTheWire } from './egress/chrome-identity.ts';
import type { ProxyEndpoint } from './egress/proxy-urls.ts';
import { ClientIdentity, ScrapeSession, type FirstContact, type RequestKind } from './egress/scrape-session.ts';
import { caBundle, withCaBundle } from './scrape-trust.ts';
import { ScrapeFailure, type FetchedPage, type FetchInit, type PageFetcher } from './types.ts';

/** Larger pages are refused: no platform page comes near it, and memory stays bounded. */
export const MAX_BODY_BYTES = 8 * 1_048_576;
const MAX_REDIRECTS = 5;
/**
 * Clients kept at most. A client holds about 30 KiB with its kept-alive connection (measured);
 * a process has one session per exit and platform at a time, and one default client per origin.
 */
const DEFAULT_MAX_CLIENTS = 512;

export interface HttpClientsOptions {
  /** A PEM file of CAs to trust beside the system store (SCRAPE_CA_FILE; scrape-trust.ts). */
  caFile?: string;
  maxClients?: number;
}

/** One identity's wreq transport, and the requests using it (it is closed when dropped and idle). */
export class HttpClient {
  private inFlight = 0;
  private dropped = false;
  /** Has had an answer, so may hold kept-alive connections (see `send` in createHttpFetcher). */
  answered = false;
  /** Its transport could not be built (a proxy URL wreq refuses, a CA bundle it cannot read). */
  broken = false;
  constructor(private readonly transport: Promise<Transport>) {
    // A transport that could not be built is said by the request that waits for it, and the next
    // request builds another.
    transport.catch(() => {
      this.broken = true;
    });
  }
  /** The transport, held for one request until `release`. */
  async hold(): Promise<Transport> {
    this.inFlight++;
    try {
      return await this.transport;
    } catch (err) {
      this.release();
      throw err;
    }
  }
  release(): void {
    this.inFlight--;
    if (this.dropped && this.inFlight === 0) this.close();
  }
  /** No more requests will be made with it: its connections are let go once those in flight end. */
  drop(): void {
    this.dropped = true;
    if (this.inFlight === 0) this.close();
  }
  private close(): void {
    this.transport.then((t) => t.close()).catch(() => {});
  }
}

/** The wreq transports of a process, one per identity, shared by its fetchers. */
export interface HttpClients {
  /** The client requests made as `identity` go through (through `proxy` when given). */
  clientOf(identity: ClientIdentity, proxy: ProxyEndpoint | null): HttpClient;
  /** The identity requests to `origin` made without a session go out as. */
  defaultIdentity(origin: string): ClientIdentity;
  /** Reads the CA file now (scrape-trust.ts), so that a bad one is said at start. */
  warm(): void;
  /** Clients kept now. */
  readonly size: number;
  close(): void;
}

/** wreq's names of the proxy schemes it speaks: `socks:` is SOCKS 5 as curl reads it. */
function wreqProxyUrl(proxy: ProxyEndpoint): string {
  return proxy.url.startsWith('socks:') ? `socks5:${proxy.url.slice('socks:'.length)}` : proxy.url;
}

export function createHttpClients(options: HttpClientsOptions = {}): HttpClients {
  const max = Math.max(1, options.maxClients ?? DEFAULT_MAX_CLIENTS);
  // Insertion order is use order: a client used is moved to the end, the first is the least recent.
  const clients = new Map<ClientIdentity, HttpClient>();
  const defaults = new Map<string, ClientIdentity>();
  let bundle: string | null | undefined;
  const trust = () => (bundle ??= caBundle(options.caFile));

  const make = (identity: ClientIdentity, proxy: ProxyEndpoint | null): HttpClient => {
    const ca = trust();
    // createTransport reads SSL_CERT_FILE before its first await, so the variable is set for it alone.
    const transport = withCaBundle(ca, () =>
      createTransport({ browser: CHROME_PROFILE, os: emulationOs(identity.headers), ...(proxy ? { proxy: wreqProxyUrl(proxy) } : {}) }),
    );
    return new HttpClient(transport);
  };

  return {
    clientOf(identity, proxy) {
      const kept = clients.get(identity);
      if (kept?.broken) clients.delete(identity);
      else if (kept) {
        clients.delete(identity);
        clients.set(identity, kept);
        return kept;
      }
      // A retired session sends no more requests (one in flight keeps its transport open until it ends).
      for (const [other, client] of clients) {
        if (other instanceof ScrapeSession && other.retired) {
          clients.delete(other);
          client.drop();
        }
      }
      while (clients.size >= max) {
        const [oldest, client] = clients.entries().next().value!;
        clients.delete(oldest);
        client.drop();
      }
      const client = make(identity, proxy);
      clients.set(identity, client);
      return client;
    },
    defaultIdentity(origin) {
      let identity = defaults.get(origin);
      if (!identity) {
        if (defaults.size >= max) defaults.delete(defaults.keys().next().value!);
        identity = new ClientIdentity(chromeHeaderSet());
        defaults.set(origin, identity);
      }
      return identity;
    },
    warm: () => void trust(),
    get size() {
      return clients.size;
    },
    close() {
      for (const client of clients.values()) client.drop();
      clients.clear();
      defaults.clear();
    },
  };
}

export interface HttpFetcherOptions {
  /** Requests in flight at once. */
  concurrency: number;
  /** Upper bound of one request, from the call to the last byte (queueing included). */
  timeoutMs: number;
  /** A PEM file of CAs to trust beside the system store (SCRAPE_CA_FILE), for clients of its own. */
  caFile?: string;
  /** Clients shared with the process's other fetchers (their owner closes them, and set their CAs); else its own. */
  clients?: HttpClients;
}

export interface HttpFetcher extends PageFetcher {
  /** Sets up the CA trust now, so that a bad SCRAPE_CA_FILE is said at start, not at the first scrape. */
  warm(): Promise<void>;
  /** Drops its own clients (and their connections); a shared set is its owner's to close. */
  close(): void;
}

/** A counting semaphore: at most `limit` holders at once, the rest wait in order. */
class Slots {
  private free: number;
  private readonly waiting: (() => void)[] = [];
  constructor(limit: number) {
    this.free = limit;
  }
  /** Waits for a slot; rejects (holding none) if `signal` aborts first. */
  async take(signal: AbortSignal): Promise<void> {
    signal.throwIfAborted();
    if (this.free > 0) {
      this.free--;
      return;
    }
    await new Promise<void>((resolve, reject) => {
      const onAbort = () => {
        this.waiting.splice(this.waiting.indexOf(granted), 1);
        reject(signal.reason);
      };
      const granted = () => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      };
      this.waiting.push(granted);
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }
  give(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.free++;
  }
}

/** The body as text in the page's declared charset, else UTF-8; a leading BOM is dropped. */
function decode(body: Uint8Array, contentType: string | null): string {
  const charset = /charset\s*=\s*"?([\w.:-]+)/i.exec(contentType ?? '')?.[1]?.toLowerCase();
  if (charset === undefined || charset === 'utf-8' || charset === 'utf8') {
    const text = Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8');
    return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  }
  try {
    return new TextDecoder(charset).decode(body);
  } catch {
    return new TextDecoder().decode(body);
  }
}

/** The answer's headers as the fetchers always gave them: lower-case names, Set-Cookie a list. */
function headersOf(headers: WreqAnswer['headers']): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  headers.forEach((value, name) => {
    if (name !== 'set-cookie') out[name] = value;
  });
  const cookies = headers.getSetCookie();
  if (cookies.length > 0) out['set-cookie'] = cookies;
  return out;
}

/**
 * Reads a body up to MAX_BODY_BYTES (after its content-encoding is undone), counted as it arrives.
 * wreq's signal ends the wait for the answer's head only, so `signal` ends the read here.
 */
async function readAll(answer: WreqAnswer, url: string, signal: AbortSignal): Promise<Uint8Array> {
  const declared = Number(answer.headers.get('content-length') ?? 0);
  if (declared > MAX_BODY_BYTES) {
    await discard(answer);
    throw new ScrapeFailure('upstream', `${url} answered ${declared} bytes, more than ${MAX_BODY_BYTES}`);
  }
  const stream = answer.body;
  if (stream === null) return new Uint8Array(0);
  const reader = stream.getReader();
  const onAbort = () => void reader.cancel(signal.reason).catch(() => {});
  signal.addEventListener('abort', onAbort, { once: true });
  try {
    const chunks: Uint8Array[] = [];
    let size = 0;
    for (;;) {
      signal.throwIfAborted();
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > MAX_BODY_BYTES) {
        await reader.cancel().catch(() => {});
        throw new ScrapeFailure('upstream', `${url} answered more than ${MAX_BODY_BYTES} bytes`);
      }
      chunks.push(value);
    }
    signal.throwIfAborted();
    if (chunks.length === 1) return chunks[0]!;
    const out = new Uint8Array(size);
    let at = 0;
    for (const chunk of chunks) {
      out.set(chunk, at);
      at += chunk.byteLength;
    }
    return out;
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}

/** Lets go of an answer whose body is not wanted (a redirect's, a failure's). */
async function discard(answer: WreqAnswer): Promise<void> {
  try {
    await answer.body?.cancel();
  } catch {
    // Already closed or consumed: nothing to let go of.
  }
}

/** `text` with the proxy's URL named by its label, and its secret nowhere. */
function scrub(text: string, proxy: ProxyEndpoint | null): string {
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

/**
 * wreq's error text on one line, without its `GET <url>: error sending request for uri (<url>)`
 * preamble (the caller names the URL): the chain of causes, down to the OS's or BoringSSL's words
 * (`Connection refused`, `CERTIFICATE_VERIFY_FAILED`).
 */
function reasonOf(err: Error): string {
  const text = err.message.replace(/^(?:\w*Error: )+/, '').replace(/\s+/g, ' ').trim();
  const rest = text.replace(/^[A-Z]+ \S+: /, '').replace(/^error sending request for uri \([^)]*\): /, '');
  // hyper and BoringSSL repeat a cause at each layer (`client error (Connect): client error (Connect)`).
  const parts = rest.split(': ').filter((part, i, all) => part !== all[i - 1]);
  const once = parts.join(': ');
  return once.length > 300 ? `${once.slice(0, 300)}…` : once;
}

/** Why a request was cut short: its time ran out, or its caller gave up. */
type Cut = 'timeout' | 'aborted';

/**
 * Whether a request failed on a kept-alive connection the server had closed just as it was reused
 * (hyper: the connection closed or was reset before any answer). That request is sent once more,
 * on a fresh connection, as Node's own client and browsers do; a client's first request has no
 * connection to reuse, so its failure is the platform's, and a failure to connect is never this.
 */
function staleConnection(err: unknown): boolean {
  if (!(err instanceof Error) || err.name === 'AbortError') return false;
  const text = err.message;
  return !/\(Connect\)|timed? ?out/i.test(text) && /connection closed|connection reset|IncompleteMessage|broken pipe|\(SendRequest\)/i.test(text);
}

/** wreq's own bound on a request (given the time the call has left) ran out. */
function wreqTimedOut(err: unknown): boolean {
  return err instanceof Error && err.name !== 'AbortError' && /\btimed? ?out\b|TimedOut|deadline has elapsed/i.test(err.message);
}

export function createHttpFetcher(options: HttpFetcherOptions): HttpFetcher {
  const slots = new Slots(options.concurrency);
  const own = options.clients ? null : createHttpClients({ caFile: options.caFile });
  const clients = options.clients ?? own!;

  const fetchPage = async (url: string, init: FetchInit, kind: RequestKind): Promise<FetchedPage> => {
    const asked = new URL(url);
    const started = Date.now();
    // One controller and one timer per call: AbortSignal.timeout and AbortSignal.any cost more.
    const controller = new AbortController();
    let cut: Cut | null = null;
    const stop = (why: Cut) => {
      cut ??= why;
      controller.abort();
    };
    const timer = setTimeout(() => stop('timeout'), options.timeoutMs);
    const onCallerAbort = () => stop('aborted');
    if (init.signal?.aborted) stop('aborted');
    else init.signal?.addEventListener('abort', onCallerAbort, { once: true });
    const cutShort = (err: unknown): ScrapeFailure =>
      cut === 'aborted'
        ? new ScrapeFailure('attempt_timeout', `fetching ${url} was aborted`, { cause: err })
        : new ScrapeFailure('attempt_timeout', `no answer from ${url} within ${options.timeoutMs} ms`, { cause: err });
    try {
      try {
        await slots.take(controller.signal);
      } catch (err) {
        // A caller that gives up while waiting for a slot hears so at once, as from a request in flight.
        throw cutShort(err);
      }
      try {
        const session = init.session;
        const proxy = session?.exit.proxy ?? null;
        const identity = session ?? clients.defaultIdentity(asked.origin);
        const method = init.method ?? 'GET';
        let client: HttpClient;
        let transport: Transport;
        try {
          client = clients.clientOf(identity, proxy);
          transport = await client.hold();
        } catch (err) {
          const via = proxy ? ` through the proxy ${proxy.label}` : '';
          throw new ScrapeFailure('upstream', `fetching ${url}${via} failed: ${scrub(reasonOf(err as Error), proxy)}`, { cause: err, proxyFailed: proxy !== null });
        }
        try {
        let target = asked;
        for (let hop = 0; ; hop++) {
          // The first request of this identity to a site goes alone; the others wait for its cookies.
          let first: FirstContact;
          try {
            first = await identity.firstContact(target, controller.signal);
          } catch (err) {
            throw cutShort(err);
          }
          let answer: WreqAnswer;
          try {
            const headers = onTheWire(kind, identity.requestHeaders(kind, target.href, init.headers), target, method);
            // An empty POST says so, as Chrome's does, where Chrome puts it; hyper leaves it out.
            if (method === 'POST' && !init.body) headers.splice(target.protocol === 'http:' ? 2 : 0, 0, ['content-length', '0']);
            session?.sent();
            const send = () =>
              wreqFetch(target.href, {
                transport,
                method,
                headers,
                // Our headers only, in our order; and no cookie store of wreq's (the identity's jar is the one).
                disableDefaultHeaders: true,
                cookieMode: 'ephemeral',
                body: method === 'POST' ? (init.body ?? '') : undefined,
                // wreq cancels the request in flight on abort (its stream is reset, measured).
                signal: controller.signal,
                timeout: Math.max(1, options.timeoutMs - (Date.now() - started)),
                redirect: 'manual',
              });
            try {
              answer = await send();
            } catch (err) {
              if (cut || !client.answered || !staleConnection(err)) throw err;
              answer = await send();
            }
          } catch (err) {
            first(false);
            throw failureOf(err, url, proxy, cut, cutShort, options.timeoutMs);
          }
          client.answered = true;
          const status = answer.status;
          if (status === 407 && proxy) {
            first(false);
            await discard(answer);
            // The proxy, not the platform, refused: named by label, its credentials never shown.
            throw new ScrapeFailure('upstream', `the proxy ${proxy.label} refused our credentials (407) fetching ${url}`, { proxyFailed: true });
          }
          identity.received(target.href, answer.headers.getSetCookie());
          first(true);
          const location = answer.headers.get('location');
          if (status >= 300 && status < 400 && location !== null) {
            await discard(answer);
            const next = new URL(location, target);
            // Full-URL event ids are checked against the platform's hosts: a redirect must not undo that.
            if (next.origin !== asked.origin || hop >= MAX_REDIRECTS) throw new ScrapeFailure('upstream', `${url} redirected to ${next.origin === asked.origin ? 'too many places' : 'another origin'}`);
            target = next;
            continue;
          }
          const retryAfter = answer.headers.get('retry-after');
          const failure = init.readStatuses?.includes(status) ? null : failureForStatus(url, status, retryAfter, Date.now());
          if (failure) {
            await discard(answer);
            throw failure;
          }
          let body: string;
          try {
            body = decode(await readAll(answer, url, controller.signal), answer.headers.get('content-type'));
          } catch (err) {
            if (err instanceof ScrapeFailure) throw err;
            if (cut) throw cutShort(err);
            // wreq's own bound (the same limit) may end the read a moment before our timer does.
            if (wreqTimedOut(err)) throw new ScrapeFailure('attempt_timeout', `no answer from ${url} within ${options.timeoutMs} ms`, { cause: err });
            const cause = proxy ? Object.assign(new Error(scrub((err as Error).message, proxy)), { name: (err as Error).name }) : err;
            throw new ScrapeFailure('upstream', `reading ${url} failed: ${scrub(reasonOf(err as Error), proxy)}`, { cause });
          }
          const page: FetchedPage = { status, url: target.href, body, headers: headersOf(answer.headers) };
          const wall = init.blockPage?.({ status, headers: page.headers!, body });
          if (wall) throw blockPageFailure(url, wall, retryAfter, Date.now());
          return page;
        }
        } finally {
          client.release();
        }
      } finally {
        slots.give();
      }
    } finally {
      clearTimeout(timer);
      init.signal?.removeEventListener('abort', onCallerAbort);
    }
  };

  return {
    async html(url, init = {}) {
      const page = await fetchPage(url, init, 'html');
      return { ...page, $: load(page.body, { _useHtmlParser2: true } as Parameters<typeof load>[1]) };
    },
    async json(url, init = {}) {
      const page = await fetchPage(url, init, 'json');
      let data: unknown;
      try {
        data = JSON.parse(page.body);
      } catch {
        data = undefined;
      }
      return { ...page, data };
    },
    async warm() {
      clients.warm();
    },
    close() {
      own?.close();
    },
  };
}

/**
 * The failure of a request that got no answer. A time-out is `attempt_timeout`; anything else is
 * `upstream`, the proxy's fault when there is one (a proxy that cannot reach the platform answers
 * 502 itself, which reads as the platform's 5xx, so no answer at all is the proxy's).
 */
function failureOf(err: unknown, url: string, proxy: ProxyEndpoint | null, cut: Cut | null, cutShort: (err: unknown) => ScrapeFailure, timeoutMs: number): ScrapeFailure {
  if (cut) return cutShort(err);
  const via = proxy ? ` through the proxy ${proxy.label}` : '';
  // Through a proxy, the error kept as the cause (logs show it) says what it said, scrubbed.
  const cause = proxy && err instanceof Error ? Object.assign(new Error(scrub(err.message, proxy)), { name: err.name }) : err;
  if (wreqTimedOut(err)) return new ScrapeFailure('attempt_timeout', `no answer from ${url}${via} within ${timeoutMs} ms`, { cause });
  const text = err instanceof Error ? err.message : String(err);
  if (proxy && /\b407\b|Proxy Authentication Required/i.test(text)) {
    return new ScrapeFailure('upstream', `the proxy ${proxy.label} refused our credentials (407) fetching ${url}`, { cause, proxyFailed: true });
  }
  const tunnel = proxy ? /tunnel\D*?(\d{3})|unsuccessful tunnel|proxy.*?\b([45]\d\d)\b/i.exec(text) : null;
  if (proxy && tunnel) {
    const status = tunnel[1] ?? tunnel[2];
    return new ScrapeFailure('upstream', `the proxy ${proxy.label} refused to open a tunnel to ${url}${status ? ` with ${status}` : ''}`, { cause, proxyFailed: true });
  }
  const reason = err instanceof Error ? reasonOf(err) : String(err);
  return new ScrapeFailure('upstream', `fetching ${url}${via} failed: ${scrub(reason, proxy)}`, { cause, proxyFailed: proxy !== null });
}
