// Debian's nginx as the compose stack's `proxy`, run from a prefix of its own in the run's temp
// directory: deploy/nginx.conf as shipped, with only what a container network supplies rewritten
// (the upstream names become the loopback ports of the two gateways and two stream nodes, port
// 80 a free loopback port, the access log a file in the prefix). Everything else is the shipped
// file, so the rehearsal tests the proxy configuration production runs.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const SHIPPED = fileURLToPath(new URL('../deploy/nginx.conf', import.meta.url));
export const NGINX_BINARY = '/usr/sbin/nginx';

export interface NginxOptions {
  /** The prefix: config, pid, logs and temp paths live here. */
  dir: string;
  port: number;
  gateways: number[];
  streams: number[];
}

/** deploy/nginx.conf with the container names and paths replaced; throws if the file no longer has them. */
export async function renderSiteConfig(opts: NginxOptions): Promise<string> {
  let text = await fs.readFile(SHIPPED, 'utf8');
  const replace = (pattern: RegExp, by: string, what: string) => {
    if (!pattern.test(text)) throw new Error(`deploy/nginx.conf has no ${what} (${pattern}): update rehearsal/nginx.ts`);
    text = text.replace(pattern, by);
  };
  const servers = (ports: number[], indent: string) => ports.map((p) => `${indent}server 127.0.0.1:${p};`).join('\n');
  replace(/^(\s*)server gateway:8080;/m, servers(opts.gateways, '  '), 'gateway upstream');
  replace(/^(\s*)server stream:8081;/m, servers(opts.streams, '  '), 'stream upstream');
  replace(/^(\s*)listen 80;/m, `  listen 127.0.0.1:${opts.port};`, 'listen 80');
  replace(/access_log \/var\/log\/nginx\/access\.log/, `access_log ${path.join(opts.dir, 'access.log')}`, 'access log');
  return text;
}

/**
 * The main file around it: what Debian's /etc/nginx/nginx.conf gives a conf.d file, minus the
 * system paths. One worker: the machine has two cores for everything.
 */
function mainConfig(dir: string, site: string): string {
  const asRoot = process.getuid?.() === 0;
  return [
    '# Written by rehearsal/nginx.ts for one rehearsal run.',
    'daemon off;',
    'worker_processes 1;',
    // As root the workers drop to nobody, as Debian's package does (www-data there).
    ...(asRoot ? ['user nobody nogroup;'] : []),
    `pid ${path.join(dir, 'nginx.pid')};`,
    `error_log ${path.join(dir, 'error.log')} warn;`,
    'events { worker_connections 1024; }',
    'http {',
    `  client_body_temp_path ${path.join(dir, 'client_body')};`,
    `  proxy_temp_path ${path.join(dir, 'proxy')};`,
    `  fastcgi_temp_path ${path.join(dir, 'fastcgi')};`,
    `  uwsgi_temp_path ${path.join(dir, 'uwsgi')};`,
    `  scgi_temp_path ${path.join(dir, 'scgi')};`,
    '  default_type application/octet-stream;',
    site,
    '}',
    '',
  ].join('\n');
}

export class Nginx {
  private child: ChildProcess | null = null;
  private exited: Promise<void> = Promise.resolve();
  readonly url: string;
  readonly confFile: string;

  constructor(
    private readonly opts: NginxOptions,
    private readonly onSpawn: (pid: number) => void,
  ) {
    this.url = `http://127.0.0.1:${opts.port}`;
    this.confFile = path.join(opts.dir, 'nginx.conf');
  }

  get pid(): number | null {
    return this.child?.pid ?? null;
  }

  private args(...more: string[]): string[] {
    return ['-p', this.opts.dir, '-c', this.confFile, '-e', path.join(this.opts.dir, 'error.log'), ...more];
  }

  async writeConfig(): Promise<void> {
    await fs.mkdir(this.opts.dir, { recursive: true });
    // The workers (nobody, when run as root) must reach their temp paths inside it.
    await fs.chmod(this.opts.dir, 0o755);
    await fs.writeFile(this.confFile, mainConfig(this.opts.dir, await renderSiteConfig(this.opts)));
    const check = spawnSync(NGINX_BINARY, this.args('-t', '-q'), { encoding: 'utf8' });
    if (check.status !== 0) throw new Error(`nginx -t refused the generated config ${this.confFile}:\n${check.stderr}`);
  }

  /** Starts the master in the foreground (our child) and waits until the port answers. */
  async start(): Promise<number> {
    const started = Date.now();
    // A process group of its own: a SIGKILL takes the master and its workers, as a container's death does.
    const child = spawn(NGINX_BINARY, this.args(), { stdio: ['ignore', 'ignore', 'pipe'], detached: true });
    let stderr = '';
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr = (stderr + d).slice(-4000)));
    this.child = child;
    this.exited = new Promise((resolve) => child.once('exit', () => resolve()));
    if (child.pid) this.onSpawn(child.pid);
    for (;;) {
      if (child.exitCode !== null || child.signalCode !== null) throw new Error(`nginx exited (${child.exitCode ?? child.signalCode}):\n${stderr}`);
      try {
        // Any answer is nginx's own (a 502 while no gateway answers is still nginx up).
        await fetch(`${this.url}/openapi.json`, { signal: AbortSignal.timeout(1_000) }).then((r) => r.arrayBuffer());
        return Date.now() - started;
      } catch {
        // not listening yet
      }
      if (Date.now() - started > 15_000) throw new Error(`nginx did not answer on ${this.url} within 15 s:\n${stderr}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** `nginx -s reload`: new workers with the config, old ones finish their connections. */
  reload(): void {
    const r = spawnSync(NGINX_BINARY, this.args('-s', 'reload'), { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`nginx -s reload failed: ${r.stderr}`);
  }

  /** `nginx -s stop` (fast shutdown), then waits for the master to exit. */
  async stop(): Promise<void> {
    if (!this.running) return;
    const r = spawnSync(NGINX_BINARY, this.args('-s', 'stop'), { encoding: 'utf8' });
    if (r.status !== 0) this.signalGroup('SIGTERM');
    const timer = setTimeout(() => this.signalGroup('SIGKILL'), 10_000);
    await this.exited;
    clearTimeout(timer);
  }

  /** SIGKILL to the master and its workers at once. */
  async kill(): Promise<void> {
    if (!this.running) return;
    this.signalGroup('SIGKILL');
    await this.exited;
    // The pid file of a killed master stays; the next start writes its own.
    await fs.rm(path.join(this.opts.dir, 'nginx.pid'), { force: true });
  }

  get running(): boolean {
    return this.child !== null && this.child.exitCode === null && this.child.signalCode === null;
  }

  private signalGroup(signal: NodeJS.Signals): void {
    if (!this.child?.pid) return;
    try {
      process.kill(-this.child.pid, signal);
    } catch {
      // gone already
    }
  }
}
