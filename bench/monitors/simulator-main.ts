// The platform simulator in its own process for the monitors bench, so the scrapes it serves do
// not count as the worker's CPU. Empty (the bench puts every event), on a free port; prints one
// JSON line {url, baseUrls, hitsUrl} once listening, and exits on SIGINT/SIGTERM or when the
// bench's end of stdin closes (the bench died without cleaning up).
//
// Arguments: `--platform=pf_03|pf_01` (the bench's BENCH_PLATFORM: which requests are polls) and
// `--pf01-session-ttl-ms=N` (the bench's BENCH_SESSION_TTL_MS, startSimulator's
// pf01SessionTtlMs: how long a pf_01 session made in a browser stays good).
//
// hitsUrl is a small side server that counts the polls served without listing every event:
// GET /hits → {total, requests, sessions}: `total` counts the answers of the platform's poll
// route (one per poll: pf_03's event page, pf_01's seat arm; platform.ts), except refusals (401,
// 403: a pf_01 arm asked without a valid session is not a poll, the worker makes a session and
// asks again; and what the simulator's limits by address answer a banned address, a 429 or the
// platform's challenge page, whose status is 200: bench:proxies bans its proxies' addresses); `requests` every request the platform's events served (the simulator's own
// `hits`, the unit of the control API's PUT answer: on pf_01 also the other arm, and the event
// page when a poll renders it); `sessions` pf_01's protection counts (sessions issued, requests
// refused), null where the simulator has none. With ?keys=1 also {byKey: {eventKey: hits}}. The control API's GET /_sim/events would send every event's
// inventory, which the bench would read several times a second while it times a restart.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startSimulator } from '../../src/simulator/server.ts';
import { parseBenchPlatform, PLATFORM_SHAPES } from './platform.ts';
import { stopWithBench } from './support.ts';

function arg(name: string): string | undefined {
  const prefix = `--${name}=`;
  return process.argv.find((a) => a.startsWith(prefix))?.slice(prefix.length);
}

const platform = parseBenchPlatform(arg('platform'));
const pollRoute = PLATFORM_SHAPES[platform].pollRoute;
const ttlArg = arg('pf01-session-ttl-ms');
const pf01SessionTtlMs = ttlArg === undefined ? undefined : Number(ttlArg);
if (pf01SessionTtlMs !== undefined && !(Number.isFinite(pf01SessionTtlMs) && pf01SessionTtlMs > 0)) throw new Error(`--pf01-session-ttl-ms must be a positive number, got ${ttlArg}`);

// Polls, counted as they are answered: the simulator's server is created inside startSimulator,
// so its createServer is wrapped for that one call with a listener that only counts (the
// simulator's own handler still answers every request).
let polls = 0;
const createServer = http.createServer;
const counting = ((...args: Parameters<typeof http.createServer>) => {
  const server = createServer(...args);
  server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    if (req.method !== 'GET' || !pollRoute.test(req.url ?? '')) return;
    res.once('finish', () => {
      // Both bench platforms stand behind the Cloudflare-style wall (src/simulator/challenge-pages.ts).
      if (res.statusCode !== 401 && res.statusCode !== 403 && res.statusCode !== 429 && res.getHeader('cf-mitigated') !== 'challenge') polls++;
    });
  });
  return server;
}) as typeof http.createServer;
http.createServer = counting;
// pf01SessionTtlMs (issue 23's pf_01 sessions): passed as a built object, so this compiles and
// runs on a checkout whose startSimulator does not take it yet too (it is then ignored).
const options: Parameters<typeof startSimulator>[0] & { pf01SessionTtlMs?: number } = { empty: true, port: 0, ...(pf01SessionTtlMs !== undefined ? { pf01SessionTtlMs } : {}) };
let sim: Awaited<ReturnType<typeof startSimulator>>;
try {
  sim = await startSimulator(options);
} finally {
  http.createServer = createServer;
}
/** pf_01's protection, read as far as the bench needs it (absent on a simulator without one). */
const protection = (sim as { protection?: { stats(): { sessions_issued: number; refused: number; session_ttl_ms: number } } }).protection;

const hits = http.createServer((req, res) => {
  const url = new URL(req.url ?? '/', 'http://localhost');
  if (url.pathname !== '/hits') {
    res.writeHead(404).end();
    return;
  }
  const withKeys = url.searchParams.get('keys') === '1';
  let requests = 0;
  const byKey: Record<string, number> = {};
  for (const e of sim.store.all()) {
    if (e.platform !== platform) continue;
    requests += e.hits;
    if (withKeys) byKey[e.key] = e.hits;
  }
  const stats = protection?.stats();
  const sessions = stats ? { issued: stats.sessions_issued, refused: stats.refused, ttlMs: stats.session_ttl_ms } : null;
  const body = { total: polls, requests, sessions, ...(withKeys ? { byKey } : {}) };
  res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
});
await new Promise<void>((resolve) => hits.listen(0, '127.0.0.1', resolve));
const hitsUrl = `http://127.0.0.1:${(hits.address() as AddressInfo).port}/hits`;

process.stdout.write(`${JSON.stringify({ url: sim.url, baseUrls: sim.baseUrls, hitsUrl })}\n`);
stopWithBench(() => {
  hits.closeAllConnections();
  hits.close();
  void sim.close().finally(() => process.exit(0));
});
