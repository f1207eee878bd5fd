// Starts a server under test in its own process (so the load generator never shares its
// event loop) and waits until it accepts connections.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import { canConnect } from '../../db/embedded.ts';

export interface ServerProcess {
  pid: number;
  /** Resident memory of the process, in MiB. */
  rssMiB(): number;
  stop(): Promise<void>;
}


export async function startServer(script: string, port: number, env: Record<string, string>): Promise<ServerProcess> {
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', script], {
    env: { ...process.env, ...env, PORT: String(port) },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const deadline = Date.now() + 60_000;
  while (!(await canConnect(port))) {
    if (child.exitCode !== null) throw new Error(`${script} exited with ${child.exitCode}`);
    if (Date.now() > deadline) throw new Error(`${script} did not listen on ${port}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    pid: child.pid!,
    rssMiB() {
      const status = fs.readFileSync(`/proc/${child.pid}/status`, 'utf8');
      const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
      return Math.round(kb / 1024);
    },
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGINT');
      }),
  };
}

export { reservePort } from '../../src/runtime/ports.ts';
