// The dev server `npm start` runs: the real CLI binary on reserved ports with a temp DATA_DIR, its
// frontend and Web UI answering, workflow history kept across a stop and start, a clean stop that
// leaves no process behind, and clear failures for busy ports and a server that cannot start.
import { spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.ts';
import { resolveTemporalCli } from '../../temporal/binary.ts';
import { connectTemporal } from '../../temporal/client.ts';
import { devServerFiles, startDevServer, type DevServer } from '../../temporal/dev-server.ts';
import { isRunning } from '../../temporal/processes.ts';
import { PROJECT_ROOT } from '../support/harness.ts';
import { uniqueTaskQueue } from '../support/temporal.ts';
import { acceptsConnections, reservePort } from '../../src/runtime/ports.ts';

const log = createLogger('silent');
let binary: string;
let dataDir: string;
const started: DevServer[] = [];


async function waitUntil(check: () => boolean | Promise<boolean>, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return check();
}

async function start(dir: string, ports: { port: number; uiPort: number }, bin: string = binary): Promise<DevServer> {
  const server = await startDevServer({ binary: bin, dataDir: dir, ...ports, namespace: 'default', log });
  started.push(server);
  return server;
}

beforeAll(async () => {
  const resolved = await resolveTemporalCli({ cliPath: process.env.TEMPORAL_CLI_PATH || undefined });
  if (!resolved) throw new Error('no Temporal CLI binary on this machine: run `npm run temporal:install`');
  binary = resolved;
  dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'tm-temporal-dev-'));
});

afterAll(async () => {
  for (const s of started) await s.stop();
  await fs.rm(dataDir, { recursive: true, force: true });
});

describe('startDevServer', () => {
  it('serves the frontend and Web UI, keeps workflows across a restart, and stops without leftovers', async () => {
    const ports = { port: await reservePort(), uiPort: await reservePort() };
    const first = await start(dataDir, ports);
    expect(first.address).toBe(`127.0.0.1:${ports.port}`);
    expect(first.uiUrl).toBe(`http://localhost:${ports.uiPort}`);
    expect(first.pid).toBeGreaterThan(0);

    const ui = await fetch(`http://127.0.0.1:${ports.uiPort}/`);
    expect(ui.status).toBe(200);
    await ui.arrayBuffer();

    // No worker serves this queue: the workflow stays open, its start recorded in history.
    const workflowId = `persisted-${Date.now()}`;
    const c1 = await connectTemporal({ address: first.address, namespace: 'default' });
    try {
      await c1.client.workflow.start('neverPolled', { taskQueue: uniqueTaskQueue('dev-server'), workflowId, args: [42] });
    } finally {
      await c1.close();
    }
    const files = devServerFiles(dataDir);
    expect(JSON.parse(await fs.readFile(files.pidFile, 'utf8'))).toEqual({ pid: first.pid, owner: process.pid });

    await first.stop();
    expect(isRunning(first.pid!)).toBe(false);
    expect(await acceptsConnections(ports.port)).toBe(false);
    expect(await acceptsConnections(ports.uiPort)).toBe(false);
    await expect(fs.stat(files.pidFile)).rejects.toThrow();
    await first.stop(); // idempotent

    const second = await start(dataDir, ports);
    const c2 = await connectTemporal({ address: second.address, namespace: 'default' });
    try {
      const handle = c2.client.workflow.getHandle(workflowId);
      const described = await handle.describe();
      expect(described.status.name).toBe('RUNNING');
      expect(described.type).toBe('neverPolled');
      const history = await handle.fetchHistory();
      expect(history.events?.[0]?.workflowExecutionStartedEventAttributes?.workflowType?.name).toBe('neverPolled');
      await handle.terminate('test done');
    } finally {
      await c2.close();
    }
    await second.stop();
    expect(isRunning(second.pid!)).toBe(false);
  });

  it('a busy port fails with a message naming the port, its variable and the process that holds it', async () => {
    const blocker = net.createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', () => r()));
    const busy = (blocker.address() as net.AddressInfo).port;
    const holder = `by pid ${process.pid} (`;
    try {
      const err = await start(dataDir, { port: busy, uiPort: await reservePort() }).catch((e: Error) => e);
      expect((err as Error).message).toContain(`port ${busy} (TEMPORAL_PORT) is already in use ${holder}`);
      expect((err as Error).message).toContain('; set TEMPORAL_PORT to a free port');
      await expect(start(dataDir, { port: await reservePort(), uiPort: busy })).rejects.toThrow(`port ${busy} (TEMPORAL_UI_PORT) is already in use ${holder}`);
    } finally {
      await new Promise((r) => blocker.close(r));
    }
  });

  // Issue 35: a port can be taken between the launcher's check and the server's bind (the server
  // then panics). A stand-in binary reports exactly what the real one prints then, the first
  // `failures` times it is run, and afterwards runs the real server with the same arguments.
  async function losingBinary(dir: string, failures: number, lost: 'frontend' | 'internal'): Promise<{ path: string; runs: () => Promise<number> }> {
    const counter = path.join(dir, 'runs');
    await fs.writeFile(counter, '');
    const file = path.join(dir, 'temporal-losing-a-port');
    const port = lost === 'frontend' ? '$port' : '54321';
    await fs.writeFile(
      file,
      `#!/bin/sh
echo run >> '${counter}'
port=$(echo "$@" | sed -n 's/.*--port \\([0-9]*\\).*/\\1/p')
if [ "$(wc -l < '${counter}')" -le ${failures} ]; then
  echo '{"level":"fatal","msg":"Failed to start gRPC listener","error":"listen tcp 127.0.0.1:'${port}': bind: address already in use","service":"frontend"}' >&2
  echo 'panic: runtime error: invalid memory address or nil pointer dereference' >&2
  echo 'goroutine 1 [running]:' >&2
  exit 2
fi
exec '${binary}' "$@"
`,
      { mode: 0o755 },
    );
    return { path: file, runs: async () => (await fs.readFile(counter, 'utf8')).split('\n').filter(Boolean).length };
  }

  it('a port the server loses at its bind: started again on other ports when they were its own to choose, and never a panic handed on', async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'tm-temporal-lost-'));
    try {
      const lines: string[] = [];
      const warnLog = createLogger('warn', { write: (l: string) => void lines.push(l) });
      // The frontend's own port, reserved by the launcher (port 0): lost twice, the third start serves.
      const losing = await losingBinary(dir, 2, 'frontend');
      const server = await startDevServer({ binary: losing.path, dataDir: path.join(dir, 'a'), port: 0, uiPort: null, namespace: 'default', log: warnLog });
      started.push(server);
      expect(await losing.runs()).toBe(3);
      const c = await connectTemporal({ address: server.address, namespace: 'default' });
      await c.connection.close();
      expect(lines.filter((l) => l.includes('was taken before the Temporal server could bind it; starting it again'))).toHaveLength(2);
      await server.stop();
      expect(await acceptsConnections(Number(server.address.split(':')[1]))).toBe(false);
    } finally {
      await fs.rm(dir, { recursive: true, force: true });
    }
  });

  it('a port the server loses at its bind: a configured one is named with its variable, an internal one fails after 3 starts', async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'tm-temporal-lost-'));
    try {
      const configured = await losingBinary(dir, 99, 'frontend');
      const port = await reservePort();
      const err = (await start(path.join(dir, 'b'), { port, uiPort: await reservePort() }, configured.path).catch((e: Error) => e)) as Error;
      expect(err.message).toBe(`Temporal dev server did not start: port ${port} (TEMPORAL_PORT) is already in use; set TEMPORAL_PORT to a free port`);
      expect(await configured.runs()).toBe(1);

      await fs.rm(path.join(dir, 'runs'));
      const internal = await losingBinary(dir, 99, 'internal');
      const err2 = (await start(path.join(dir, 'c'), { port: await reservePort(), uiPort: await reservePort() }, internal.path).catch((e: Error) => e)) as Error;
      expect(err2.message).toBe('Temporal dev server did not start: port 54321 was taken before the Temporal server could bind it, 3 times in a row');
      expect(err2.message).not.toMatch(/panic|goroutine/);
      expect(await internal.runs()).toBe(3);
    } finally {
      await fs.rm(dir, { recursive: true, force: true });
    }
  });

  it('a server that exits at start-up fails with its last output', async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'tm-temporal-bad-'));
    try {
      const bad = path.join(dir, 'bad-temporal');
      await fs.writeFile(bad, '#!/bin/sh\necho "unable to open database file: boom" >&2\nexit 3\n', { mode: 0o755 });
      const err = await start(dir, { port: await reservePort(), uiPort: await reservePort() }, bad).catch((e: Error) => e);
      expect(err).toBeInstanceOf(Error);
      expect((err as Error).message).toMatch(/Temporal dev server did not start: exited \(code 3\)/);
      expect((err as Error).message).toContain('unable to open database file: boom');

      await expect(start(dir, { port: await reservePort(), uiPort: await reservePort() }, path.join(dir, 'missing'))).rejects.toThrow(/could not run/);
    } finally {
      await fs.rm(dir, { recursive: true, force: true });
    }
  });
});

describe('the dev server and the process that started it', () => {
  function launch(dir: string, ports: { port: number; uiPort: number }, mode: 'exit' | 'idle') {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', 'test/temporal/fixtures/start-and-exit.ts', binary, dir, String(ports.port), String(ports.uiPort), mode],
      { cwd: PROJECT_ROOT, stdio: ['ignore', 'pipe', 'inherit'] },
    );
    const pid = new Promise<number>((resolve, reject) => {
      let out = '';
      child.stdout!.setEncoding('utf8').on('data', (d: string) => {
        out += d;
        const line = out.split('\n').find((l) => l.startsWith('{'));
        if (line) resolve(JSON.parse(line).pid);
      });
      // 'close', not 'exit': it comes after the last of the child's output has been read.
      child.once('close', (code) => reject(new Error(`launcher exited (${code}) before printing: ${out}`)));
    });
    return { child, pid };
  }

  it('exiting without stop() still stops the server (exit hook)', async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'tm-temporal-exit-'));
    try {
      const ports = { port: await reservePort(), uiPort: await reservePort() };
      const { pid } = launch(dir, ports, 'exit');
      const serverPid = await pid;
      expect(await waitUntil(async () => !isRunning(serverPid) && !(await acceptsConnections(ports.port)), 30_000)).toBe(true);
    } finally {
      await fs.rm(dir, { recursive: true, force: true });
    }
  });

  it('a server orphaned by a SIGKILLed owner is refused while the owner lives and stopped by the next start', async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'tm-temporal-orphan-'));
    const ports = { port: await reservePort(), uiPort: await reservePort() };
    const { child, pid } = launch(dir, ports, 'idle');
    let serverPid = 0;
    try {
      serverPid = await pid;
      // Its owner still runs: a second server on the same SQLite file is refused.
      await expect(start(dir, { port: await reservePort(), uiPort: await reservePort() })).rejects.toThrow(
        new RegExp(`a Temporal dev server \\(pid ${serverPid}\\) started by process ${child.pid} is already using`),
      );
      const gone = new Promise((r) => child.once('exit', r));
      child.kill('SIGKILL'); // the launcher only: its server lives on, orphaned
      await gone;
      expect(isRunning(serverPid)).toBe(true);

      const next = await start(dir, ports);
      expect(isRunning(serverPid)).toBe(false);
      expect(next.pid).not.toBe(serverPid);
      await next.stop();
    } finally {
      child.kill('SIGKILL');
      if (serverPid && isRunning(serverPid)) process.kill(serverPid, 'SIGKILL');
      await fs.rm(dir, { recursive: true, force: true });
    }
  });
});
