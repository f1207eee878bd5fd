// The loopback proxies of bench:proxies (and of bench:monitors with BENCH_PROXIES) in their own
// process, so what they cost is measured apart from the worker, as the simulator's is: each a
// proxy-chain server on 127.0.0.1 sending from its own address (127.0.0.2, 127.0.0.3, ...;
// test/support/loopback-proxies.ts), asking for credentials as paid proxies do, forwarding to
// loopback only. Prints one JSON line {setting, addresses, statsUrl} once listening (`setting`
// is the SCRAPE_PROXY_URLS value), and exits on SIGINT/SIGTERM or when the bench's end of stdin
// closes (the bench died without cleaning up).
//
// Argument: `--count=N`. statsUrl is a small side server: GET /stats → [{address, http, connect}],
// the requests each proxy forwarded and the tunnels it opened, a cross-check of the simulator's
// request log by address.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startLoopbackProxies } from '../../test/support/loopback-proxies.ts';
import { stopWithBench } from '../monitors/support.ts';

const countArg = process.argv.find((a) => a.startsWith('--count='))?.slice('--count='.length);
const count = Number(countArg);
if (!Number.isInteger(count) || count < 1) throw new Error(`--count must be a whole number of at least 1, got ${countArg}`);

// Credentials so the worker sends Proxy-Authorization as it would to a paid proxy: part of the
// cost being measured. Not a secret: the proxies forward to loopback only.
const proxies = await startLoopbackProxies(count, { credentials: { username: 'bench', password: 'bench-proxies' } });

const stats = http.createServer((req, res) => {
  if (req.url !== '/stats') {
    res.writeHead(404).end();
    return;
  }
  const body = proxies.proxies.map((p) => ({ address: p.address, ...p.stats() }));
  res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
});
await new Promise<void>((resolve) => stats.listen(0, '127.0.0.1', resolve));
const statsUrl = `http://127.0.0.1:${(stats.address() as AddressInfo).port}/stats`;

process.stdout.write(`${JSON.stringify({ setting: proxies.setting, addresses: proxies.proxies.map((p) => p.address), statsUrl })}\n`);
stopWithBench(() => {
  stats.closeAllConnections();
  stats.close();
  void proxies.close().finally(() => process.exit(0));
});
