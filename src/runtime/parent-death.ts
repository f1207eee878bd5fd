// Servers this process starts and owns (the embedded Temporal dev server, the production Temporal
// server's processes, the tests' stripe-mock) must not outlive it. A clean stop stops them, and an
// 'exit' handler covers process.exit, but neither runs when the process is killed (SIGKILL, the
// OOM killer) or crashes in native code: the orphaned Temporal dev server then held its port and
// the next `npm start` refused to start ("port 7233 (TEMPORAL_PORT) is already in use by pid
// ..."). So they are started through util-linux's setpriv with a parent-death signal: the kernel
// signals them when this process dies, however it dies. setpriv execs the server in place, so
// the pid is the server's. Where there is no setpriv (not Linux), they start as before.
import { existsSync } from 'node:fs';

const SETPRIV = process.platform === 'linux' ? (['/usr/bin/setpriv', '/bin/setpriv'].find((p) => existsSync(p)) ?? null) : null;

/**
 * The command that runs `file` with `args`, signalled with `signal` (SIGTERM: the server shuts
 * down as on a stop) when this process dies. A `file` that does not exist is left as it is, so
 * spawn reports it as before (ENOENT) rather than setpriv's exit status.
 */
export function diesWithThisProcess(file: string, args: readonly string[], signal: 'TERM' | 'KILL' = 'TERM'): { file: string; args: string[] } {
  if (SETPRIV === null || !existsSync(file)) return { file, args: [...args] };
  return { file: SETPRIV, args: ['--pdeathsig', signal, '--', file, ...args] };
}
