// Starts bench/proxies/proxies-main.ts (the loopback proxies in a process of their own) for
// bench:proxies and for bench:monitors with BENCH_PROXIES, registered with the bench's
// Lifecycle (and its janitor) as it starts, so it is stopped at the end, on failure and on Ctrl-C.
import { fileURLToPath } from 'node:url';
import type { Lifecycle } from '../monitors/lifecycle.ts';
import { startLineProcess } from '../monitors/support.ts';

const PROXIES_MAIN = fileURLToPath(new URL('./proxies-main.ts', import.meta.url));

export interface ProxiesProcess {
  pid: number;
  count: number;
  /** SCRAPE_PROXY_URLS for all of them (credentials included). */
  setting: string;
  /** Each proxy's outgoing address, in the order of `setting`. */
  addresses: string[];
  /** GET → [{address, http, connect}] (proxies-main.ts). */
  statsUrl: string;
}

export async function startProxiesProcess(count: number, life: Lifecycle): Promise<ProxiesProcess> {
  const { pid, info, stop } = await startLineProcess<{ setting: string; addresses: string[]; statsUrl: string }>(`the ${count} loopback proxies`, PROXIES_MAIN, [`--count=${count}`]);
  life.onCleanup('loopback proxies', stop);
  life.started({ process: { pid, match: 'proxies-main' } });
  return { pid, count, ...info };
}

/** Requests each proxy forwarded so far, by outgoing address. */
export async function proxyStats(p: ProxiesProcess): Promise<Map<string, { http: number; connect: number }>> {
  const res = await fetch(p.statsUrl);
  const rows = (await res.json()) as { address: string; http: number; connect: number }[];
  return new Map(rows.map((r) => [r.address, { http: r.http, connect: r.connect }]));
}
