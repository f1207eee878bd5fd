// Test support for the PageFetcher tests (fetch-pages.test.ts for the lean node:http fetcher,
// http-pages.test.ts for the crawlee one): a local HTTP server on 127.0.0.1 whose routes answer
// with the statuses, headers, bodies, redirects, delays and dropped sockets those tests ask for,
// and which counts the requests it sees and how many are in flight at once; plus a second
// ("elsewhere") server that only counts its hits, the other origin redirects must not reach.
// Both fetchers are held to the same contract, so both tests ask the same server:
// usePageServers() starts the two for a test file and closes them after it.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll } from 'vitest';

export interface TestServer {
  url: string;
  /** Requests seen, by path. */
  seen: string[];
  /** Requests in flight now, and the most seen at once. */
  inFlight: { now: number; max: number };
  /** Resolves with the time a /hang request's socket closed. */
  hangClosed: Promise<number>;
  close(): Promise<void>;
}

/** A server on a free port of 127.0.0.1, and its base URL. */
export async function listen(handler: http.RequestListener): Promise<{ server: http.Server; url: string }> {
  const server = http.createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

/** Another origin: answers every request with the same page, and counts them. */
export interface Elsewhere {
  server: http.Server;
  url: string;
  hits: number;
}

async function startElsewhere(): Promise<Elsewhere> {
  let hits = 0;
  const started = await listen((_req, res) => {
    hits++;
    res.end('<p>elsewhere</p>');
  });
  return {
    ...started,
    get hits() {
      return hits;
    },
  };
}

/** Larger than fetch-pages.ts's bound on a body (8 MiB). */
const TOO_LARGE = 9 * 1_048_576;

/** The test server; `elsewhere` is the origin /redirect-away and /redirect-other-port send to. */
async function startTestServer(elsewhere: string): Promise<TestServer> {
  const seen: string[] = [];
  const inFlight = { now: 0, max: 0 };
  let onHangClosed: (t: number) => void = () => {};
  const hangClosed = new Promise<number>((resolve) => (onHangClosed = resolve));
  const { server, url } = await listen((req, res) => {
    const parsed = new URL(req.url ?? '/', 'http://x');
    const path = parsed.pathname;
    seen.push(path);
    inFlight.now++;
    inFlight.max = Math.max(inFlight.max, inFlight.now);
    res.on('close', () => inFlight.now--);
    const send = (status: number, type: string, body: string, headers: Record<string, string> = {}) => {
      res.writeHead(status, { 'content-type': type, ...headers });
      res.end(body);
    };
    const redirect = (location: string, status = 302) => {
      res.writeHead(status, { location });
      res.end();
    };
    const status = /^\/status\/(\d{3})$/.exec(path);
    // ?retry-after=… is sent back as the Retry-After header.
    const retryAfter = parsed.searchParams.get('retry-after');
    if (status) return send(Number(status[1]), 'text/html', `<h1>status ${status[1]}</h1>`, retryAfter === null ? {} : { 'retry-after': retryAfter });
    // /chain/N redirects N times (on this origin, relative and absolute by turns), then to /html.
    const chain = /^\/chain\/(\d+)$/.exec(path);
    if (chain) {
      const left = Number(chain[1]);
      if (left === 0) return redirect('/html', 301);
      return redirect(left % 2 === 0 ? `/chain/${left - 1}` : `${url}/chain/${left - 1}`, left % 2 === 0 ? 302 : 307);
    }
    // /wait/N answers after N ms.
    const wait = /^\/wait\/(\d+)$/.exec(path);
    if (wait) return void setTimeout(() => send(200, 'text/html', '<p>waited</p>'), Number(wait[1]));
    switch (path) {
      case '/html':
        return send(200, 'text/html; charset=utf-8', '<html><body><p class="x">Zürich &amp; <b>Wien</b></p></body></html>');
      case '/latin1':
        res.writeHead(200, { 'content-type': 'text/html; charset=ISO-8859-1' });
        return void res.end(Buffer.from('<p class="x">Z\u00fcrich</p>', 'latin1'));
      case '/headers':
        return send(200, 'application/json', JSON.stringify(req.headers));
      case '/json':
        return send(200, 'application/json', '{"ok":true,"n":[1,2]}');
      case '/json-error':
        return send(503, 'application/json', '{oops');
      case '/bad-json':
        return send(200, 'application/json', '{"ok": tru');
      case '/text':
        return send(200, 'text/plain', 'plain words');
      case '/empty':
        return send(200, 'application/json', '');
      case '/echo': {
        let body = '';
        req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
        req.on('end', () => send(200, 'application/json', JSON.stringify({ method: req.method, headers: req.headers, body })));
        return;
      }
      case '/post': {
        // Like /echo, with only the content type of the request's headers.
        let body = '';
        req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
        req.on('end', () => send(200, 'application/json', JSON.stringify({ method: req.method, type: req.headers['content-type'], body })));
        return;
      }
      case '/slow':
        return void setTimeout(() => send(200, 'text/html', '<p>late</p>'), 200);
      case '/slow-body':
        // Headers and half a page at once, the rest after 400 ms.
        res.writeHead(200, { 'content-type': 'text/html' });
        res.write('<p>first half');
        return void setTimeout(() => res.end(' second half</p>'), 400);
      case '/hang':
        req.socket.once('close', () => onHangClosed(performance.now()));
        return;
      case '/drop':
        return void req.socket.destroy();
      case '/huge-declared':
        res.writeHead(200, { 'content-type': 'text/html', 'content-length': String(TOO_LARGE) });
        return void res.write('<p>');
      case '/huge-chunked':
        res.writeHead(200, { 'content-type': 'text/html' });
        return void res.end('x'.repeat(TOO_LARGE));
      case '/redirect-here':
        return redirect('/html');
      case '/redirect-post':
        return redirect('/echo', 307);
      case '/redirect-loop':
        return redirect('/redirect-loop');
      case '/redirect-away':
        return redirect(`${elsewhere}/html`);
      case '/redirect-other-port':
        // The same host on another port is another origin.
        return redirect(`${elsewhere.replace('127.0.0.1', 'localhost')}/html`);
      case '/redirect-nowhere':
        // A 3xx without a Location is an answer like any other: a page.
        return send(304, 'text/html', '');
      default:
        return send(404, 'text/html', 'nothing here');
    }
  });
  return {
    url,
    seen,
    inFlight,
    hangClosed,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * The test server and its elsewhere for the test file that calls this (at its top level, before
 * its own hooks): started before its tests, closed after them. vitest runs afterAll hooks in the
 * reverse of their order, so a fetcher the file closes in its own afterAll is closed first. The
 * objects returned are there at once, and filled in when beforeAll has started the servers.
 */
export function usePageServers(): { server: TestServer; other: Elsewhere } {
  const server = {} as TestServer;
  const other = {} as Elsewhere;
  beforeAll(async () => {
    // Descriptors, not values: hits is a getter.
    Object.defineProperties(other, Object.getOwnPropertyDescriptors(await startElsewhere()));
    Object.assign(server, await startTestServer(other.url));
  });
  afterAll(async () => {
    await server.close?.();
    other.server?.closeAllConnections();
    other.server?.close();
  });
  return { server, other };
}
