// The platform simulator in its own process for the monitors bench, so the scrapes it serves do
// not count as the worker's CPU. Empty (the bench puts every event), on a free port; prints one
// JSON line {url, baseUrls, caFile, hitsUrl} once listening (the platforms' HTTPS URLs and the CA to trust; the control API over HTTP), and exits on SIGINT/SIGTERM or when the
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

// Polls, counted as they are answered, over HTTP and HTTPS alike (the front's 'answered' event;
// the simulator's own handler still answers every request). A wall's refusal is the platform's
// challenge page, as a ban's is.
let polls = 0;
const wallsArg = arg('walls');
if (wallsArg !== undefined && wallsArg !== 'on' && wallsArg !== 'off') throw new Error(`--walls must be on or off, got ${wallsArg}`);
// pf01SessionTtlMs (issue 23's pf_01 sessions) and walls (issue 37): passed as a built object, so
// this compiles and runs on a checkout whose startSimulator does not take them yet (then ignored).
const options: Parameters<typeof startSimulator>[0] & { pf01SessionTtlMs?: number; walls?: 'on' | 'off' } = {
  empty: true,
  port: 0,
  ...(pf01SessionTtlMs !== undefined ? { pf01SessionTtlMs } : {}),
  ...(wallsArg !== undefined ? { walls: wallsArg } : {}),
};
const sim = await startSimulator(options);
const front = (sim as { front?: { on(event: 'answered', listener: (req: { method?: string; url?: string }, res: { statusCode: number; getHeader(name: string): unknown }) => void): void } }).front;
const countPoll = (req: { method?: string; url?: string }, res: { statusCode: number; getHeader(name: string): unknown }) => {
  if (req.method !== 'GET' || !pollRoute.test(req.url ?? '')) return;
  // Both bench platforms stand behind the Cloudflare-style wall (src/simulator/challenge-pages.ts).
  if (res.statusCode !== 401 && res.statusCode !== 403 && res.statusCode !== 429 && res.getHeader('cf-mitigated') !== 'challenge') polls++;
};
if (front) front.on('answered', countPoll);
else throw new Error('this checkout\'s simulator has no front to count polls on (issue 37); run the bench on a newer one');
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
  // The platform's wall: what it let through and refused, by reason (all 0 with walls off).
  const wall = sim.walls.stats()[platform];
  const walls = { on: wall.settings.enabled, passed: wall.passed, refused: wall.refused, lastRefusal: wall.last_refusal };
  // Every site's walls together (bench:alerts polls several platforms).
  const everySite = Object.values(sim.walls.stats());
  const wallsAll = {
    on: everySite.some((w) => w.settings.enabled),
    passed: everySite.reduce((n, w) => n + w.passed, 0),
    refused: everySite.reduce((n, w) => n + Object.values(w.refused).reduce((a, b) => a + b, 0), 0),
    lastRefusal: everySite.map((w) => w.last_refusal).filter((r) => r !== null).sort((a, b) => b.at.localeCompare(a.at))[0] ?? null,
    // Each site that refused any: which reasons, how many cookies it gave, and when (a failing verdict names them).
    refusingSites: Object.entries(sim.walls.stats())
      .filter(([, w]) => Object.values(w.refused).some((n) => n > 0))
      .map(([site, w]) => ({ site, refused: Object.fromEntries(Object.entries(w.refused).filter(([, n]) => n > 0)), cookiesIssued: w.cookie.issued, recent: w.recent_refusals })),
  };
  const body = { total: polls, requests, sessions, walls, wallsAll, ...(withKeys ? { byKey } : {}) };
  res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
});
await new Promise<void>((resolve) => hits.listen(0, '127.0.0.1', resolve));
const hitsUrl = `http://127.0.0.1:${(hits.address() as AddressInfo).port}/hits`;

// The platforms over HTTPS, as the service reaches them by default, with the CA to trust; the
// control API over plain HTTP (the bench's own calls are no platform's visitors).
process.stdout.write(`${JSON.stringify({ url: sim.url, baseUrls: sim.httpsBaseUrls, caFile: sim.caFile, hitsUrl })}\n`);
stopWithBench(() => {
  hits.closeAllConnections();
  hits.close();
  void sim.close().finally(() => process.exit(0));
});
