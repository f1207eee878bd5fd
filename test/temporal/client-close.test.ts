// Closing a Temporal client while its calls to an unreachable server wait on the SDK's retry
// timers (temporal/client.ts retryInterceptor). The SDK starts such a retry without looking at the
// channel, and grpc-js then threw "Channel has been shut down" from the timer, uncaught: the
// process died, and in a full test run it failed the run (2026-11-29, twice). Run in a process of
// its own, so that an uncaught exception is its exit, not this file's.
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../support/harness.ts';

/** A loopback port that refuses connections: bound, then closed. */
async function refusedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  await new Promise((r) => server.close(r));
  return port;
}

describe('a Temporal client closed while its calls wait to retry', () => {
  it('ends them as cancelled: nothing is thrown after the close', async () => {
    const port = await refusedPort();
    const child = spawn(process.execPath, ['--import', 'tsx', 'test/temporal/fixtures/close-while-retrying.ts', `127.0.0.1:${port}`], { cwd: PROJECT_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d));
    child.stderr.on('data', (d: Buffer) => (out += d));
    const code = await new Promise<number | null>((r) => child.once('close', r));
    expect(out).not.toMatch(/shut down/i);
    expect({ code, out: out.trim() }).toEqual({ code: 0, out: 'closed cleanly' });
  }, 30_000);
});
