// The one HTTP PageFetcher of the scrapers (issue 37): polls, on-demand scrapes, the tracker's
// marketplace fetches and pf_01's data requests all go through it, on impit with Chrome 151's
// profile, so every request is a browser's on the wire: its TLS ClientHello, HTTP/2 with Chrome's
// SETTINGS and pseudo-header order, and Chrome's headers in Chrome's order (egress/chrome-identity.ts).
// Node's own client (59 cipher suites, no ALPN) under a Chrome user agent is the mismatch bot
// walls block first.
//
// One impit client per client identity, as a browser is one: a scrape session's (its exit's proxy,
// its header set, its cookie jar: egress/scrape-session.ts), or, for a request made without a
// session, its origin's default client, with an identity and a jar of its own, so the cookies a
// platform sets are kept and sent in the direct mode too. Cookies are kept here, not by impit: every
// answer's Set-Cookie (redirects included) goes into the identity's jar, and every request sends the
// jar's current value, so a cookie the platform rotates replaces the old one. Clients are kept while
// their session lives, at most `maxClients` of them (the least recently used beyond that is dropped).
//
// The contract, as the two fetchers it replaces had it: the same failures for the same answers
// (answer-status.ts), `readStatuses` handed back to the caller, redirects only within the origin
// asked for, a bound on time (queueing included) and on size, an answer the platform's challenge
// page rule matches is `blocked` (block-pages.ts), and Cheerio over htmlparser2 for HTML. A proxy
// that fails is named by label in the message, never by its URL (which holds its credentials).
import { load } from 'cheerio';
import impit from 'impit';
import { blockPageFailure, failureForStatus } from './answer-status.ts';
import { CHROME_PROFILE, chromeHeaderSet, onTheWire } from './egress/chrome-identity.ts';
import type { ProxyEndpoint } from './egress/proxy-urls.ts';
import { ClientIdentity, ScrapeSession, type RequestKind } from './egress/scrape-session.ts';
import { trustScrapeCa } from './scrape-trust.ts';
import { ScrapeFailure, type FetchedPage, type FetchInit, type PageFetcher } from './types.ts';

// impit is CommonJS; its error classes are set on its exports in a way Node's ESM named imports do not see.
const { Impit, ProxyAuthRequired, ProxyTunnelError, RemoteProtocolError, TimeoutError } = impit;
type ImpitClient = InstanceType<typeof Impit>;
type ImpitAnswer = Awaited<ReturnType<ImpitClient['fetch']>>;

/** Larger pages are refused: no platform page comes near it, and memory stays bounded. */
export const MAX_BODY_BYTES = 8 * 1_048_576;
const MAX_REDIRECTS = 5;
/**
 * Clients kept at most. An idle client holds about 24 KiB (its connections more, while they last);
 * a process has one session per exit and platform at a time, and one default client per origin.
 */
const DEFAULT_MAX_CLIENTS = 512;

export interface HttpClientsOptions {
  /** A PEM file of CAs to trust beside the system store (SCRAPE_CA_FILE; scrape-trust.ts). */
  caFile?: string;
  maxClients?: number;
}

/** The impit clients of a process, one per identity, shared by its fetchers. */
export interface HttpClients {
  /** The client requests made as `identity` go through (through `proxy` when given). */
  clientOf(identity: ClientIdentity, proxy: ProxyEndpoint | null): ImpitClient;
  /** The identity requests to `origin` made without a session go out as. */
  defaultIdentity(origin: string): ClientIdentity;
  /** Sets up the CA trust now (scrape-trust.ts), so that a bad CA file is said at start. */
  warm(): void;
  /** Clients kept now. */
  readonly size: number;
  close(): void;
}

/** impit's names of the proxy schemes it speaks: `socks:` is SOCKS 5 as curl reads it. */
function impitProxyUrl(proxy: ProxyEndpoint): string {
  return proxy.url.startsWith('socks:') ? `socks5:${proxy.url.slice('socks:'.length)}` : proxy.url;
}

export function createHttpClients(options: HttpClientsOptions = {}): HttpClients {
  const max = Math.max(1, options.maxClients ?? DEFAULT_MAX_CLIENTS);
  // Insertion order is use order: a client used is moved to the end, the first is the least recent.
  const clients = new Map<ClientIdentity, ImpitClient>();
  const defaults = new Map<string, ClientIdentity>();
  let trusted = false;
  const trust = () => {
    if (trusted) return;
    trustScrapeCa(options.caFile);
    trusted = true;
  };

  const make = (proxy: ProxyEndpoint | null): ImpitClient => {
    trust();
    // Redirects are followed here (each hop checked against the origin, its cookies kept), and
    // no timeout is impit's: each request is given the time it has left.
    return new Impit({ browser: CHROME_PROFILE, followRedirects: false, ...(proxy ? { proxyUrl: impitProxyUrl(proxy) } : {}) });
  };

  return {
    clientOf(identity, proxy) {
      const kept = clients.get(identity);
      if (kept) {
        clients.delete(identity);
        clients.set(identity, kept);
        return kept;
      }
      // A retired session sends no more requests (one in flight holds its client itself).
      for (const other of clients.keys()) if (other instanceof ScrapeSession && other.retired) clients.delete(other);
      while (clients.size >= max) clients.delete(clients.keys().next().value!);
      const client = make(proxy);
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
    warm: trust,
    get size() {
      return clients.size;
    },
    close() {
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
function headersOf(headers: Headers): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  headers.forEach((value, name) => {
    if (name !== 'set-cookie') out[name] = value;
  });
  const cookies = headers.getSetCookie();
  if (cookies.length > 0) out['set-cookie'] = cookies;
  return out;
}

/** Reads a body up to MAX_BODY_BYTES (after its content-encoding is undone), counted as it arrives. */
async function readAll(answer: ImpitAnswer, url: string): Promise<Uint8Array> {
  const declared = Number(answer.headers.get('content-length') ?? 0);
  if (declared > MAX_BODY_BYTES) {
    await discard(answer);
    throw new ScrapeFailure('upstream', `${url} answered ${declared} bytes, more than ${MAX_BODY_BYTES}`);
  }
  // A declared length within the bound is read in one call: impit's stream costs more CPU per
  // answer than the whole rest of a request (WHATWG streams). Its decoded body may still be larger
  // (a compressed answer), so the size is checked again after.
  if (declared > 0 && answer.headers.get('content-encoding') === null) {
    const body = new Uint8Array(await answer.arrayBuffer());
    if (body.byteLength > MAX_BODY_BYTES) throw new ScrapeFailure('upstream', `${url} answered more than ${MAX_BODY_BYTES} bytes`);
    return body;
  }
  const reader = answer.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > MAX_BODY_BYTES) {
      await reader.cancel().catch(() => {});
      throw new ScrapeFailure('upstream', `${url} answered more than ${MAX_BODY_BYTES} bytes`);
    }
    chunks.push(value);
  }
  if (chunks.length === 1) return chunks[0]!;
  const out = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) {
    out.set(chunk, at);
    at += chunk.byteLength;
  }
  return out;
}

/** Lets go of an answer whose body is not wanted (a redirect's, a failure's). */
async function discard(answer: ImpitAnswer): Promise<void> {
  try {
    await answer.body.cancel();
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
 * impit's error text on one line: its first sentence, and the OS's or TLS library's own words when
 * its Rust debug dump holds them (`Connection refused`, `InvalidCertificate(UnknownIssuer)`).
 */
function reasonOf(err: Error): string {
  const [first = '', ...rest] = err.message.split('\n');
  const dump = rest.join(' ').replace(/\s+/g, ' ');
  const os = /message: "([^"]+)"/.exec(dump)?.[1];
  const tls = /error: (\w+\(\s*\w+,?\s*\))/.exec(dump)?.[1]?.replace(/[\s,]+\)/, ')');
  const where = /"tcp connect error", ([\w.:[\]]+)/.exec(dump)?.[1];
  const detail = [os, tls, where && `(${where})`].filter(Boolean).join(' ');
  return `${first.trim().replace(/\.$/, '')}${detail ? `: ${detail}` : dump ? `: ${dump.slice(0, 200)}` : ''}`;
}

/** Why a request was cut short: its time ran out, or its caller gave up. */
type Cut = 'timeout' | 'aborted';

/** An empty POST body: impit takes an empty string for no body at all. */
const NO_BYTES = new Uint8Array(0);

/**
 * Clients that have had an answer, so hold kept-alive connections. A connection the server closed
 * just as it was reused fails before any answer (hyper: a remote protocol error); that request is
 * sent once more, on a fresh connection, as Node's own client and browsers do. A client's first
 * request has no connection to reuse: its failure is the platform's.
 */
const answeredBefore = new WeakSet<object>();

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
        let client: ImpitClient;
        try {
          client = clients.clientOf(identity, proxy);
        } catch (err) {
          const via = proxy ? ` through the proxy ${proxy.label}` : '';
          throw new ScrapeFailure('upstream', `fetching ${url}${via} failed: ${scrub((err as Error).message, proxy)}`, { cause: err, proxyFailed: proxy !== null });
        }
        let target = asked;
        for (let hop = 0; ; hop++) {
          const headers = onTheWire(kind, identity.requestHeaders(kind, target.href, init.headers), target, method);
          // An empty POST says so, as Chrome's does, where Chrome puts it; hyper leaves it out.
          if (method === 'POST' && !init.body) headers.splice(target.protocol === 'http:' ? 2 : 0, 0, ['content-length', '0']);
          session?.sent();
          const send = () =>
            client.fetch(target.href, {
              method,
              headers,
              body: method === 'POST' ? (init.body ? init.body : NO_BYTES) : undefined,
              signal: controller.signal,
              // impit's own bound as well: an abort ends the wait for the answer, but only impit's
              // timeout ends the request itself (impit 0.14.5 cannot cancel one in flight).
              timeout: Math.max(1, options.timeoutMs - (Date.now() - started)),
              redirect: 'manual',
            });
          let answer: ImpitAnswer;
          try {
            try {
              answer = await send();
            } catch (err) {
              if (!(err instanceof RemoteProtocolError) || cut || !answeredBefore.has(client)) throw err;
              answer = await send();
            }
          } catch (err) {
            throw failureOf(err, url, proxy, cut, cutShort, options.timeoutMs);
          }
          answeredBefore.add(client);
          const status = answer.status;
          if (status === 407 && proxy) {
            await discard(answer);
            // The proxy, not the platform, refused: named by label, its credentials never shown.
            throw new ScrapeFailure('upstream', `the proxy ${proxy.label} refused our credentials (407) fetching ${url}`, { proxyFailed: true });
          }
          identity.received(target.href, answer.headers.getSetCookie());
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
            body = decode(await readAll(answer, url), answer.headers.get('content-type'));
          } catch (err) {
            if (err instanceof ScrapeFailure) throw err;
            if (cut) throw cutShort(err);
            // impit's own bound (the same limit) may end the read a moment before our timer does.
            if (err instanceof TimeoutError || /\bTimedOut\b/.test((err as Error).message)) throw new ScrapeFailure('attempt_timeout', `no answer from ${url} within ${options.timeoutMs} ms`, { cause: err });
            const cause = proxy ? Object.assign(new Error(scrub((err as Error).message, proxy)), { name: (err as Error).name }) : err;
            throw new ScrapeFailure('upstream', `reading ${url} failed: ${scrub(reasonOf(err as Error), proxy)}`, { cause });
          }
          const page: FetchedPage = { status, url: target.href, body, headers: headersOf(answer.headers) };
          const wall = init.blockPage?.({ status, headers: page.headers!, body });
          if (wall) throw blockPageFailure(url, wall, retryAfter, Date.now());
          return page;
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
  if (err instanceof TimeoutError) return new ScrapeFailure('attempt_timeout', `no answer from ${url}${via} within ${timeoutMs} ms`, { cause });
  if (proxy && err instanceof ProxyAuthRequired) {
    return new ScrapeFailure('upstream', `the proxy ${proxy.label} refused our credentials (407) fetching ${url}`, { cause, proxyFailed: true });
  }
  if (proxy && err instanceof ProxyTunnelError) {
    const status = err.status === undefined ? '' : ` with ${err.status}`;
    return new ScrapeFailure('upstream', `the proxy ${proxy.label} refused to open a tunnel to ${url}${status}`, { cause, proxyFailed: true });
  }
  const reason = err instanceof Error ? reasonOf(err) : String(err);
  return new ScrapeFailure('upstream', `fetching ${url}${via} failed: ${scrub(reason, proxy)}`, { cause, proxyFailed: proxy !== null });
}
