// Toxiproxy for tests that take a server away from one client without touching the server
// (rehearsal/toxiproxy.ts provisions the binary and drives its API; this adds what tests do with
// it): a partition (every byte held both ways, no connection closed) and a gate (the proxy off:
// connections cut and refused, as a server that is down; on again at the same address).
import { releasePort, reservePort } from '../../src/runtime/ports.ts';
import { resolveToxiproxy, startToxiproxy, type Toxiproxy } from '../../rehearsal/toxiproxy.ts';
import { databaseUrl } from './harness.ts';

/** A Toxiproxy server for this test file (built on first use, once per machine). */
export async function testToxiproxy(): Promise<Toxiproxy> {
  const binary = await resolveToxiproxy((msg) => process.stderr.write(`toxiproxy: ${msg}\n`));
  return startToxiproxy(binary, () => {});
}

/** A proxy to `upstream` (host:port) on a reserved loopback port; returns its address. */
export async function proxyTo(toxi: Toxiproxy, name: string, upstream: string): Promise<string> {
  const listen = `127.0.0.1:${await reservePort()}`;
  await toxi.create({ name, listen, upstream });
  return listen;
}

/** The run's database address through a new proxy named `name` (cut, heal or slow it by that name). */
export async function proxiedDatabaseUrl(toxi: Toxiproxy, name: string): Promise<string> {
  const url = new URL(databaseUrl());
  url.host = await proxyTo(toxi, name, `${url.hostname}:${url.port || 5432}`);
  return url.toString();
}

/** Holds every byte both ways on the proxy's connections, open or new, until heal(): a partition, not a crash. */
export async function cut(toxi: Toxiproxy, name: string): Promise<void> {
  // `timeout` with 0: nothing passes and nothing is closed until the toxic goes.
  for (const stream of ['upstream', 'downstream'] as const) await toxi.addToxic(name, { name: `cut-${stream}`, type: 'timeout', stream, attributes: { timeout: 0 } });
}

export async function heal(toxi: Toxiproxy, name: string): Promise<void> {
  for (const stream of ['upstream', 'downstream']) await toxi.removeToxic(name, `cut-${stream}`).catch(() => {});
}

/** A server taken away and given back to one client: connecting is refused while closed, and the connections it carried are cut. */
export interface TcpGate {
  /** host:port to give the client: the same whether open or closed. */
  address: string;
  isOpen(): boolean;
  open(): Promise<void>;
  close(): Promise<void>;
  /** Stops its Toxiproxy and gives its port back. */
  stop(): Promise<void>;
}

/** A gate to `target` (host:port) with a Toxiproxy of its own. */
export async function startGate(target: string, opts: { open?: boolean } = {}): Promise<TcpGate> {
  const toxi = await testToxiproxy();
  const address = await proxyTo(toxi, 'gate', target);
  let open = true;
  const set = async (on: boolean) => {
    if (open === on) return;
    await toxi.setEnabled('gate', on);
    open = on;
  };
  if (opts.open === false) await set(false);
  return {
    address,
    isOpen: () => open,
    open: () => set(true),
    close: () => set(false),
    stop: async () => {
      await toxi.stop();
      releasePort(Number(address.split(':')[1]));
    },
  };
}
