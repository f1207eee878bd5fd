// The platform simulator in its own process for the monitors bench, so the scrapes it serves do
// not count as the worker's CPU. Empty (the bench puts every event), on a free port; prints one
// JSON line {url, baseUrls, hitsUrl} once listening, and exits on SIGINT/SIGTERM or when the
// bench's end of stdin closes (the bench died without cleaning up).
//
// hitsUrl is a small side server that counts the pages served (the polls) without listing
// every event: GET /hits → {total} (one platform, ?platform=pf_03 by default); with &keys=1 also
// {byKey: {eventKey: hits}}. The control API's GET /_sim/events would send every event's
// inventory, which the bench would read several times a second while it times a restart.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startSimulator } from '../../src/simulator/server.ts';

const sim = await startSimulator({ empty: true, port: 0 });

const hits = http.createServer((req, res) => {
  const url = new URL(req.url ?? '/', 'http://localhost');
  if (url.pathname !== '/hits') {
    res.writeHead(404).end();
    return;
  }
  const platform = url.searchParams.get('platform') ?? 'pf_03';
  const withKeys = url.searchParams.get('keys') === '1';
  let total = 0;
  const byKey: Record<string, number> = {};
  for (const e of sim.store.all()) {
    if (e.platform !== platform) continue;
    total += e.hits;
    if (withKeys) byKey[e.key] = e.hits;
  }
  res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(withKeys ? { total, byKey } : { total }));
});
await new Promise<void>((resolve) => hits.listen(0, '127.0.0.1', resolve));
const hitsUrl = `http://127.0.0.1:${(hits.address() as AddressInfo).port}/hits`;

process.stdout.write(`${JSON.stringify({ url: sim.url, baseUrls: sim.baseUrls, hitsUrl })}\n`);
let stopping = false;
const stop = () => {
  if (stopping) return;
  stopping = true;
  hits.closeAllConnections();
  hits.close();
  void sim.close().finally(() => process.exit(0));
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
process.stdin.on('end', stop);
process.stdin.on('error', stop);
process.stdin.resume();
