// Toxiproxy between the app processes and their upstreams (PostgreSQL, Temporal): one proxy per
// (process, upstream), so one worker can be cut off while every other process keeps its path.
// The binary is provisioned like the project's other Go tools (src/runtime/go-binary.ts: an
// explicit path, the per-machine cache, else a one-time `go install`), and driven over its HTTP
// API on the loopback with plain fetch: its clients would be a dependency for four calls.
import { spawn, type ChildProcess } from 'node:child_process';
import { type GoTool, resolveGoBinary } from '../src/runtime/go-binary.ts';
import { reservePort } from '../src/runtime/ports.ts';

export const TOXIPROXY: GoTool = {
  label: 'Toxiproxy',
  module: 'github.com/Shopify/toxiproxy/v2/cmd/server',
  version: 'v2.5.0',
  // `go install .../cmd/server` names the binary after its package directory.
  binaryName: 'server',
  cacheDirName: 'tm-toxiproxy',
  pathEnv: 'TOXIPROXY_PATH',
  cacheEnv: 'TOXIPROXY_CACHE',
  buildTime: 'under a minute',
  fallback: 'the rehearsal cannot cut processes off without it',
};

export interface ProxySpec {
  name: string;
  /** host:port the app process connects to. */
  listen: string;
  /** host:port of the real server. */
  upstream: string;
}

export interface Toxiproxy {
  pid: number;
  api: string;
  create(spec: ProxySpec): Promise<void>;
  /** Disabled: its connections are closed and new ones refused (a host whose packets are rejected). */
  setEnabled(name: string, enabled: boolean): Promise<void>;
  addToxic(proxy: string, toxic: { name: string; type: string; stream?: 'upstream' | 'downstream'; attributes: Record<string, number> }): Promise<void>;
  removeToxic(proxy: string, toxic: string): Promise<void>;
  /** The proxy as Toxiproxy holds it now: a fault is read back before its clock starts. */
  inspect(name: string): Promise<ProxyState>;
  stop(): Promise<void>;
}

export interface ProxyState {
  name: string;
  listen: string;
  enabled: boolean;
  toxics: { name: string; type: string; stream: string; attributes: Record<string, number> }[];
}

/** The binary, built on first use; throws with the fix when it cannot be had. */
export async function resolveToxiproxy(onProgress: (msg: string) => void): Promise<string> {
  const binary = await resolveGoBinary(TOXIPROXY, { onProgress });
  if (!binary) throw new Error(`no Toxiproxy binary: set ${TOXIPROXY.pathEnv}, or install Go so that it can be built`);
  return binary;
}

export async function startToxiproxy(binary: string, onSpawn: (pid: number) => void): Promise<Toxiproxy> {
  const port = await reservePort();
  const api = `http://127.0.0.1:${port}`;
  const child: ChildProcess = spawn(binary, ['-host', '127.0.0.1', '-port', String(port)], { stdio: ['ignore', 'ignore', 'pipe'], detached: true });
  let tail = '';
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (tail = (tail + d).slice(-4000)));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  if (child.pid) onSpawn(child.pid);
  const deadline = Date.now() + 15_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`Toxiproxy exited (${child.exitCode}) before it answered:\n${tail}`);
    try {
      const res = await fetch(`${api}/version`, { signal: AbortSignal.timeout(1_000) });
      if (res.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`Toxiproxy did not answer on ${api} within 15 s:\n${tail}`);
    await new Promise((r) => setTimeout(r, 100));
  }

  const call = async (method: string, path: string, body?: unknown): Promise<string> => {
    const res = await fetch(`${api}${path}`, {
      method,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(5_000),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`Toxiproxy ${method} ${path}: ${res.status} ${text}`);
    return text;
  };

  return {
    pid: child.pid!,
    api,
    create: async (spec) => void (await call('POST', '/proxies', { ...spec, enabled: true })),
    setEnabled: async (name, enabled) => void (await call('POST', `/proxies/${name}`, { enabled })),
    addToxic: async (proxy, t) => void (await call('POST', `/proxies/${proxy}/toxics`, { name: t.name, type: t.type, stream: t.stream ?? 'downstream', toxicity: 1, attributes: t.attributes })),
    removeToxic: async (proxy, toxic) => void (await call('DELETE', `/proxies/${proxy}/toxics/${toxic}`)),
    inspect: async (name) => JSON.parse(await call('GET', `/proxies/${name}`)) as ProxyState,
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
