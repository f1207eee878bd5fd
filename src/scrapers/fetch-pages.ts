// A lean PageFetcher on Node's own HTTP client, for the monitors' high-frequency polls. The
// crawlee fetcher (http-pages.ts) serves on-demand scrapes and the tracker; a poll repeats the
// same request every few seconds for thousands of targets, and there crawlee's per-request
// machinery (request objects validated field by field, the autoscaled pool, got-scraping's header
// generation, a second parse of every HTML page) cost 2.3-3.8 ms of CPU per request, Node's
// fetch (WHATWG streams, AbortSignal.any) 0.9 ms, and node:http on keep-alive sockets 0.4 ms
// (pf_03's page; docs/monitoring.md). It keeps the same contract: the same failures for the
// same answers (answer-status.ts), redirects only within the origin asked for, a bound on time
// and size, and Cheerio over htmlparser2 as crawlee's CheerioCrawler uses.
//
// A request made with a session (egress/scrape-session.ts) leaves through the session's exit (a
// proxy's kept-alive agent, egress/exit-pool.ts) with its headers and cookies, and keeps the
// cookies the answer sets; a compressed answer (a browser's accept-encoding asks for one) is
// decoded; an answer the platform's challenge-page rule matches (block-pages.ts) is `blocked`.
import http from 'node:http';
import https from 'node:https';
import zlib from 'node:zlib';
import { load } from 'cheerio';
import { blockPageFailure, failureForStatus } from './answer-status.ts';
import type { RequestKind } from './egress/scrape-session.ts';
import { ScrapeFailure, type FetchedPage, type FetchInit, type PageFetcher } from './types.ts';

export interface FetchPagesOptions {
  /** Requests in flight at once. */
  concurrency: number;
  /** Upper bound of one request, from the call to the last byte (queueing included). */
  timeoutMs: number;
}

export interface FetchPages extends PageFetcher {
  /** Closes the kept-alive sockets. */
  close(): void;
}

/** Larger pages are refused: no platform page comes near it, and memory stays bounded. */
const MAX_BODY_BYTES = 8 * 1_048_576;
const MAX_REDIRECTS = 5;

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

/** The page's declared charset (as crawlee honours it), else UTF-8; a leading BOM is dropped. */
function decoderFor(contentType: string | null): TextDecoder {
  const charset = /charset\s*=\s*"?([\w.:-]+)/i.exec(contentType ?? '')?.[1];
  try {
    return new TextDecoder(charset ?? 'utf-8');
  } catch {
    return new TextDecoder();
  }
}

/**
 * Sent with every request: what crawlee's fetcher sends, minus its per-request header
 * generation (most of its cost); a platform sees the same kind of client either way.
 */
const CLIENT_HEADERS = {
  'user-agent': 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36',
  'accept-language': 'en-US,en;q=0.9',
};

/** What each kind of request accepts when it is made without a session. */
const ACCEPT: Record<RequestKind, string> = { html: 'text/html,application/xhtml+xml;q=0.9,*/*;q=0.8', json: 'application/json' };

/** The body as sent, before its content-encoding (gzip, deflate or br; identity as is). */
function decompress(body: Buffer, encoding: string | undefined): Buffer {
  switch (encoding?.trim().toLowerCase()) {
    case undefined:
    case '':
    case 'identity':
      return body;
    case 'gzip':
    case 'x-gzip':
      return zlib.gunzipSync(body, { maxOutputLength: MAX_BODY_BYTES });
    case 'deflate':
      return zlib.inflateSync(body, { maxOutputLength: MAX_BODY_BYTES });
    case 'br':
      return zlib.brotliDecompressSync(body, { maxOutputLength: MAX_BODY_BYTES });
    default:
      throw new Error(`the answer is in an encoding we did not ask for (${encoding})`);
  }
}

/** The body as text in the page's declared charset, else UTF-8; a leading BOM is dropped. */
function decode(body: Buffer, contentType: string | undefined): string {
  const charset = /charset\s*=\s*"?([\w.:-]+)/i.exec(contentType ?? '')?.[1]?.toLowerCase();
  if (charset === undefined || charset === 'utf-8' || charset === 'utf8') {
    const text = body.toString('utf8');
    return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  }
  return decoderFor(contentType ?? null).decode(body);
}

/** Why a request was cut short: its time ran out, or its caller gave up. */
type Cut = 'timeout' | 'aborted';

/**
 * Sends one request; resolves with the answer's head (its body not yet read). A kept-alive
 * socket the server closed just as we reused it fails with ECONNRESET before any answer: that
 * request is sent once more on a fresh socket (Node's documented pattern, req.reusedSocket).
 */
function send(target: URL, init: FetchInit, headers: Record<string, string>, agent: http.Agent, signal: AbortSignal, retried = false): Promise<http.IncomingMessage> {
  init.session?.sent();
  return new Promise((resolve, reject) => {
    const client = target.protocol === 'https:' ? https : http;
    const req = client.request(target, { method: init.method ?? 'GET', headers, agent, signal }, resolve);
    // http-proxy-agent adds Proxy-Connection for the proxy, and a proxy that passes it on would
    // tell the platform that a proxy is in use; no browser sends it.
    if (init.session?.exit.proxy) req.removeHeader('proxy-connection');
    req.on('error', (err: NodeJS.ErrnoException) => {
      if (!retried && req.reusedSocket && err.code === 'ECONNRESET' && !signal.aborted) resolve(send(target, init, headers, agent, signal, true));
      else reject(err);
    });
    req.end(init.method === 'POST' ? (init.body ?? '') : undefined);
  });
}

/** Reads a body up to MAX_BODY_BYTES, counted as it arrives. */
function readAll(res: http.IncomingMessage, url: string): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const declared = Number(res.headers['content-length'] ?? 0);
    if (declared > MAX_BODY_BYTES) {
      res.destroy();
      return reject(new ScrapeFailure('upstream', `${url} answered ${declared} bytes, more than ${MAX_BODY_BYTES}`));
    }
    const chunks: Buffer[] = [];
    let size = 0;
    res.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        res.destroy();
        reject(new ScrapeFailure('upstream', `${url} answered more than ${MAX_BODY_BYTES} bytes`));
        return;
      }
      chunks.push(chunk);
    });
    res.on('end', () => resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)));
    res.on('error', reject);
    res.on('aborted', () => reject(new Error('the connection was closed before the whole body arrived')));
    res.on('close', () => {
      if (!res.complete) reject(new Error('the connection was closed before the whole body arrived'));
    });
  });
}

export function createFetchPages(options: FetchPagesOptions): FetchPages {
  const slots = new Slots(options.concurrency);
  const agents = {
    http: new http.Agent({ keepAlive: true, maxSockets: options.concurrency }),
    https: new https.Agent({ keepAlive: true, maxSockets: options.concurrency }),
  };

  const fetchPage = async (url: string, init: FetchInit, kind: RequestKind): Promise<FetchedPage> => {
    const origin = new URL(url).origin;
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
      cut === 'timeout'
        ? new ScrapeFailure('attempt_timeout', `no answer from ${url} within ${options.timeoutMs} ms`, { cause: err })
        : new ScrapeFailure('attempt_timeout', `fetching ${url} was aborted`, { cause: err });
    try {
      try {
        await slots.take(controller.signal);
      } catch (err) {
        // A caller that gives up while waiting for a slot hears so at once, as from a request in flight.
        throw cutShort(err);
      }
      try {
        const session = init.session;
        const plain = session ? null : { ...CLIENT_HEADERS, accept: ACCEPT[kind], ...init.headers };
        let target = new URL(url);
        for (let hop = 0; ; hop++) {
          let res: http.IncomingMessage;
          const headers = plain ?? session!.requestHeaders(kind, target.href, init.headers);
          const agent = session?.exit.agent(target.protocol) ?? (target.protocol === 'https:' ? agents.https : agents.http);
          try {
            res = await send(target, init, headers, agent, controller.signal);
          } catch (err) {
            if (cut) throw cutShort(err);
            // No answer at all through a proxy: the proxy is down or cut off (a proxy that cannot
            // reach the platform answers 502 itself, which reads as the platform's 5xx).
            const proxy = session?.exit.proxy ? ` through the proxy ${session.exit.label}` : '';
            throw new ScrapeFailure('upstream', `fetching ${url}${proxy} failed: ${(err as Error).message}`, { cause: err, proxyFailed: proxy !== '' });
          }
          const status = res.statusCode ?? 0;
          if (status === 407 && session?.exit.proxy) {
            res.destroy();
            // The proxy, not the platform, refused: named by label, its credentials never shown.
            throw new ScrapeFailure('upstream', `the proxy ${session.exit.label} refused our credentials (407)`, { proxyFailed: true });
          }
          session?.received(target.href, res.headers['set-cookie']);
          const location = res.headers.location;
          if (status >= 300 && status < 400 && location !== undefined) {
            res.destroy();
            const next = new URL(location, target);
            // Full-URL event ids are checked against the platform's hosts: a redirect must not undo that.
            if (next.origin !== origin || hop >= MAX_REDIRECTS) throw new ScrapeFailure('upstream', `${url} redirected to ${next.origin === origin ? 'too many places' : 'another origin'}`);
            target = next;
            continue;
          }
          const failure = init.readStatuses?.includes(status) ? null : failureForStatus(url, status, res.headers['retry-after'], Date.now());
          if (failure) {
            res.destroy();
            throw failure;
          }
          let page: FetchedPage;
          try {
            const body = decode(decompress(await readAll(res, url), res.headers['content-encoding']), res.headers['content-type']);
            page = { status, url: target.href, body, headers: res.headers };
          } catch (err) {
            if (err instanceof ScrapeFailure) throw err;
            if (cut) throw cutShort(err);
            throw new ScrapeFailure('upstream', `reading ${url} failed: ${(err as Error).message}`, { cause: err });
          }
          const wall = init.blockPage?.({ status, headers: res.headers, body: page.body });
          if (wall) throw blockPageFailure(url, wall, res.headers['retry-after'], Date.now());
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
    close() {
      agents.http.destroy();
      agents.https.destroy();
    },
  };
}
