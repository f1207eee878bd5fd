// The bot walls over real HTTP on loopback (src/simulator/walls/): a Koa app whose first
// middleware sets each request's wire facts from the test's table (standing in for the simulator's
// HTTPS front, which records them for real), with the header order taken from the request as it
// arrived. Real clients: Node's http, the curl binary. With the wall on, Node's https, curl, an
// HTTP/1.1 client with a Chrome user agent and HeadlessChrome are refused by every family, each
// with that family's page; a browser-like request passes. Then the bot cookie over several
// rotations, and the simulator's own walls: off by default, the control API, reset.
import { execFile } from 'node:child_process';
import { request } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { promisify } from 'node:util';
import Koa from 'koa';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { akamaiBlock, cloudflareChallenge, datadomeBlock, perimeterxBlock, type BlockPageRule } from '../../src/scrapers/block-pages.ts';
import { startSimulator, type Simulator } from '../../src/simulator/server.ts';
import type { WireFacts } from '../../src/simulator/tls/wire-facts.ts';
import { wallsMiddleware } from '../../src/simulator/walls/middleware.ts';
import { Walls, type WalledSite } from '../../src/simulator/walls/wall.ts';
import { putEvent } from '../support/simulator.ts';
import { CHROME_UA, chromeHeaders, chromeWire, CURL_UA, curlWire, HEADLESS_UA, knownInTests, nodeWire } from '../support/wall-clients.ts';

const run = promisify(execFile);

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** The facts each request is given, by its `x-wire` header; the header order is the request's own. */
const FACTS: Record<string, WireFacts> = {
  node: nodeWire(),
  curl: curlWire(),
  http11: { ...chromeWire(), httpVersion: '1.1', h2Settings: null, pseudoHeaderOrder: [] },
  chrome: chromeWire(),
};
/** Headers a front adds or HTTP/1.1 needs that an HTTP/2 request has none of (its :authority). */
const NOT_SENT_OVER_H2 = new Set(['host', 'connection', 'x-wire']);

let walls: Walls;
let server: Server;
let port: number;

beforeAll(async () => {
  walls = new Walls('on', { knownFingerprint: knownInTests });
  const app = new Koa();
  app.use(async (ctx, next) => {
    const facts = FACTS[ctx.get('x-wire')];
    if (facts) {
      const raw = ctx.req.rawHeaders.filter((_, i) => i % 2 === 0).map((n) => n.toLowerCase());
      const headerOrder = facts.httpVersion === '2.0' ? raw.filter((n) => !NOT_SENT_OVER_H2.has(n)) : raw.filter((n) => n !== 'x-wire');
      ctx.state.wire = { ...facts, headerOrder };
    }
    delete ctx.req.headers['x-wire'];
    await next();
  });
  app.use(wallsMiddleware(walls));
  app.use((ctx) => {
    ctx.body = `the page of ${ctx.path}`;
  });
  server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  await new Promise((resolve) => server?.close(resolve));
});
beforeEach(() => {
  walls.reset();
});

/** One request with Node's http, headers sent in the order given (after Host, which a raw list must carry), from `from`. */
function send(path: string, wire: string, headers: [string, string][], from = '127.0.0.1'): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, localAddress: from, agent: false, headers: [['host', `127.0.0.1:${port}`], ...headers, ['x-wire', wire]].flat() }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

const SITES: [WalledSite, string, BlockPageRule][] = [
  ['pf_03', '/pf_03/e/walled-1', cloudflareChallenge],
  ['pf_02', '/pf_02/uk/event/walled-1', perimeterxBlock],
  ['pf_04', '/pf_04/de/tickets/walled-1', datadomeBlock],
  ['pf_07', '/pf_07/event/walled-1', akamaiBlock],
  ['marketplace_a', '/marketplace_a/api/events/walled-1', cloudflareChallenge],
];

describe.each(SITES)('the %s wall (on, every check)', (site, path, rule) => {
  const refusedBy = (answer: Answer) => rule({ status: answer.status, headers: answer.headers, body: answer.body });

  it("refuses Node's https (no ALPN h2, HTTP/1.1), with and without a Chrome user agent: tls", async () => {
    for (const headers of [[], [['user-agent', CHROME_UA]]] as [string, string][][]) {
      const answer = await send(path, 'node', headers);
      expect(refusedBy(answer), answer.body).not.toBeNull();
      expect(answer.headers['set-cookie']).toBeUndefined();
    }
    expect(walls.site(site).stats().refused).toMatchObject({ tls: 2 });
  });

  it('refuses curl (the real binary): tls', async () => {
    const { stdout } = await run('curl', ['-s', '-i', '-H', 'x-wire: curl', `http://127.0.0.1:${port}${path}`]);
    const [head, ...rest] = stdout.split('\r\n\r\n');
    const status = Number(head!.split(' ')[1]);
    const headers = Object.fromEntries(head!.split('\r\n').slice(1).map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]));
    expect(refusedBy({ status, headers, body: rest.join('\r\n\r\n') })).not.toBeNull();
    expect(walls.site(site).stats()).toMatchObject({ passed: 0, refused: { tls: 1 }, last_refusal: { reason: 'tls', detail: 'the user agent names no browser' } });
    expect(CURL_UA.startsWith('curl/')).toBe(true);
  });

  it('refuses an HTTP/1.1 client with a Chrome ClientHello and user agent: http2', async () => {
    const answer = await send(path, 'http11', chromeHeaders());
    expect(refusedBy(answer)).not.toBeNull();
    expect(walls.site(site).stats().refused).toMatchObject({ http2: 1 });
  });

  it('refuses HeadlessChrome: headers', async () => {
    const answer = await send(path, 'chrome', chromeHeaders(HEADLESS_UA));
    expect(refusedBy(answer)).not.toBeNull();
    expect(walls.site(site).stats().refused).toMatchObject({ headers: 1 });
  });

  it('refuses a Chrome whose headers come in another order: headers', async () => {
    const shuffled = [...chromeHeaders()].reverse();
    const answer = await send(path, 'chrome', shuffled);
    expect(refusedBy(answer)).not.toBeNull();
    expect(walls.site(site).stats().last_refusal).toMatchObject({ reason: 'headers' });
  });

  it('lets a browser-like request through, with its bot cookie', async () => {
    const answer = await send(path, 'chrome', chromeHeaders());
    expect(answer.status).toBe(200);
    expect(answer.body).toBe(`the page of ${path}`);
    expect(refusedBy(answer)).toBeNull();
    const cookie = ([] as string[]).concat(answer.headers['set-cookie'] ?? [])[0];
    expect(cookie).toMatch(new RegExp(`^${walls.site(site).stats().cookie.name}=`));
    expect(walls.site(site).stats()).toMatchObject({ passed: 1, cookie: { issued: 1 } });
  });
});

describe('the bot cookie over real requests', () => {
  const path = '/pf_03/e/cookie-1';
  const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
  const cookieOf = (answer: Answer) => {
    const line = ([] as string[]).concat(answer.headers['set-cookie'] ?? []).find((c) => c.startsWith('__cf_bm='));
    return line?.slice(0, line.indexOf(';'));
  };
  beforeEach(() => {
    walls.site('pf_03').configure({ cookieRotateMs: 300, cookieGraceMs: 150, cookieIssuesPerAddressPerMinute: 3 });
  });

  it('a client that keeps what Set-Cookie says passes across several rotations', async () => {
    let cookie: string | undefined;
    const values = new Set<string>();
    for (let i = 0; i < 12; i++) {
      const answer = await send(path, 'chrome', [...chromeHeaders(), ...(cookie ? [['cookie', cookie] as [string, string]] : [])], '127.0.0.2');
      expect(answer.status, `request ${i}`).toBe(200);
      cookie = cookieOf(answer) ?? cookie;
      values.add(cookie!);
      await sleep(100);
    }
    expect(values.size).toBeGreaterThanOrEqual(3);
    expect(walls.site('pf_03').stats().cookie).toMatchObject({ issued: 1, rotated: values.size - 1 });
  });

  it('a client that keeps its first cookie is refused after rotation and grace, and not before', async () => {
    const started = Date.now();
    const first = cookieOf(await send(path, 'chrome', chromeHeaders(), '127.0.0.3'));
    let refusedAfter: number | null = null;
    while (Date.now() - started < 2_000) {
      const answer = await send(path, 'chrome', [...chromeHeaders(), ['cookie', first!]], '127.0.0.3');
      if (answer.status !== 200 || cloudflareChallenge({ status: answer.status, headers: answer.headers, body: answer.body })) {
        refusedAfter = Date.now() - started;
        break;
      }
      await sleep(50);
    }
    expect(refusedAfter).not.toBeNull();
    expect(refusedAfter!).toBeGreaterThanOrEqual(300 + 150);
    expect(walls.site('pf_03').stats().last_refusal).toMatchObject({ reason: 'cookie_stale' });
  });

  it('a client that drops its cookies is refused past the bound per address; another address is not', async () => {
    for (let i = 0; i < 3; i++) expect((await send(path, 'chrome', chromeHeaders(), '127.0.0.4')).status).toBe(200);
    const refused = await send(path, 'chrome', chromeHeaders(), '127.0.0.4');
    expect(cloudflareChallenge({ status: refused.status, headers: refused.headers, body: refused.body })).not.toBeNull();
    expect(walls.site('pf_03').stats().refused).toMatchObject({ cookie_missing: 1 });
    expect((await send(path, 'chrome', chromeHeaders(), '127.0.0.5')).status).toBe(200);
  });

  it('a cookie lent to another user agent is refused', async () => {
    const cookie = cookieOf(await send(path, 'chrome', chromeHeaders(), '127.0.0.6'));
    const other = chromeHeaders(CHROME_UA.replace('X11; Linux x86_64', 'X11; Linux aarch64'));
    const answer = await send(path, 'chrome', [...other, ['cookie', cookie!]], '127.0.0.6');
    expect(cloudflareChallenge({ status: answer.status, headers: answer.headers, body: answer.body })).not.toBeNull();
    expect(walls.site('pf_03').stats().last_refusal).toMatchObject({ reason: 'cookie_agent' });
  });
});

describe("the simulator's walls", () => {
  let sim: Simulator;
  beforeAll(async () => {
    sim = await startSimulator({ empty: true, walls: { pf_03: {}, marketplace_b: { tls: false } } });
  });
  afterAll(async () => {
    await sim?.close();
  });

  const control = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${sim.url}/_sim${path}`, { method, headers: body === undefined ? {} : { 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) });
    return { status: res.status, body: res.status === 204 ? null : await res.json() };
  };

  it('are off where not asked for, on where named; a plaintext request meets the challenge, counted and logged as refused', async () => {
    await putEvent(sim, 'pf_03', 'walled-2', { region: 'US', sections: [{ name: 'Floor', price: 10, stock: 1 }] });
    await putEvent(sim, 'pf_04', 'open-1', { region: 'DE', sections: [{ name: 'Floor', price: 10, stock: 1 }] });
    expect((await fetch(`${sim.url}/pf_04/de/tickets/open-1`)).status).toBe(200);
    const refused = await fetch(`${sim.url}/pf_03/e/walled-2`, { headers: { 'user-agent': CHROME_UA } });
    expect(refused.headers.get('cf-mitigated')).toBe('challenge');
    const { body } = await control('GET', '/walls');
    expect(body.sites.pf_03).toMatchObject({ family: 'cloudflare', settings: { enabled: true, tls: true }, refused: { plaintext: 1 }, passed: 0 });
    expect(body.sites.pf_04.settings.enabled).toBe(false);
    expect(body.sites.marketplace_b.settings).toMatchObject({ enabled: true, tls: false });
    expect(sim.walls.site('pf_03').stats().refused.plaintext).toBe(1);
    expect(sim.requests.since(0, 'pf_03').at(-1)).toMatchObject({ refused: true });
    // The control API is never walled.
    expect((await control('GET', '/health')).status).toBe(200);
  });

  it('stand in front of the address limits: a request the wall refuses is never counted by them', async () => {
    await control('PUT', '/pf_03/limits', { requests_per_minute: 1 });
    for (let i = 0; i < 3; i++) expect((await fetch(`${sim.url}/pf_03/e/walled-2`)).headers.get('cf-mitigated')).toBe('challenge');
    expect((await control('GET', '/pf_03/limits')).body.totals).toMatchObject({ bans_issued: 0, refused: 0 });
    expect(sim.walls.site('pf_03').stats().refused.plaintext).toBeGreaterThanOrEqual(3);
    await control('PUT', '/pf_03/limits', { requests_per_minute: null });
  });

  it('take settings at run time (POST /_sim/walls) and go back to their start on POST /_sim/reset', async () => {
    const changed = await control('POST', '/walls', { all: { enabled: true }, sites: { pf_03: { plaintext: false, tls: false, http2: false, headers: false, cookieRotateMs: 1_000 } } });
    expect(changed.status).toBe(200);
    expect(changed.body.sites.pf_08).toMatchObject({ family: 'akamai', settings: { enabled: true } });
    expect(changed.body.sites.pf_03.settings).toMatchObject({ enabled: true, plaintext: false, cookieRotateMs: 1_000 });
    // Only the cookie is judged now: a plaintext request passes and is given one (without Secure).
    await putEvent(sim, 'pf_03', 'walled-3', { region: 'US', sections: [{ name: 'Floor', price: 10, stock: 1 }] });
    const passed = await fetch(`${sim.url}/pf_03/e/walled-3`, { headers: { 'user-agent': CHROME_UA } });
    expect(passed.status).toBe(200);
    expect(passed.headers.get('set-cookie')).toMatch(/^__cf_bm=[^;]+; Path=\/pf_03; Max-Age=1800; HttpOnly; SameSite=Lax$/);
    // pf_08 now on: Akamai's 403.
    const akamai = await fetch(`${sim.url}/pf_08/event/x`);
    expect(akamai.status).toBe(403);
    expect(akamai.headers.get('server')).toBe('AkamaiGHost');
    expect((await control('POST', '/walls', { sites: { pf_99: { enabled: true } } })).status).toBe(400);
    expect((await control('POST', '/walls', { all: { cookieRotateMs: -1 } })).status).toBe(400);
    expect((await control('POST', '/walls', { all: { bogus: true } })).status).toBe(400);
    expect((await control('POST', '/reset')).status).toBe(204);
    const reset = (await control('GET', '/walls')).body;
    expect(reset.sites.pf_08.settings.enabled).toBe(false);
    expect(reset.sites.pf_03).toMatchObject({ settings: { enabled: true, plaintext: true, cookieRotateMs: 300_000 }, passed: 0, refused: { plaintext: 0 } });
  });
});
