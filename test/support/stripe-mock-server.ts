// stripe-mock, Stripe's official mock API server, for the tests of the Stripe billing provider:
// its Go-tool descriptor (provisioned like the Temporal CLI by src/runtime/go-binary.ts:
// STRIPE_MOCK_PATH, else the per-machine cache, else a one-time `go install`) and one server
// process on the loopback for a test run (global-setup.ts starts it once).
import { spawn } from 'node:child_process';
import { type GoTool, type ResolveGoBinaryOptions, resolveGoBinary } from '../../src/runtime/go-binary.ts';
import { diesWithThisProcess } from '../../src/runtime/parent-death.ts';

export const STRIPE_MOCK: GoTool = {
  label: 'stripe-mock',
  module: 'github.com/stripe/stripe-mock',
  version: 'v0.203.0',
  binaryName: 'stripe-mock',
  cacheDirName: 'tm-stripe-mock',
  pathEnv: 'STRIPE_MOCK_PATH',
  cacheEnv: 'STRIPE_MOCK_CACHE',
  buildTime: 'a few seconds',
  fallback: 'the Stripe tests cannot run',
};

export function resolveStripeMock(opts: ResolveGoBinaryOptions = {}): Promise<string | null> {
  return resolveGoBinary(STRIPE_MOCK, opts);
}

export interface StripeMockServer {
  /** http://127.0.0.1:PORT */
  url: string;
  stop(): Promise<void>;
}

/** Loading its OpenAPI spec takes a second or two; a server still silent after this is stuck. */
const START_TIMEOUT_MS = 30_000;

/** Starts `binary` on a loopback port it picks itself, resolving once it listens. */
export function startStripeMock(binary: string): Promise<StripeMockServer> {
  // The port is left to stripe-mock and read back from its banner, so no other process can take
  // it in between. HTTPS is given a port too: left out, stripe-mock still opens its default
  // :12112 on every interface and exits when another stripe-mock on the machine holds it.
  // A run that ends without its teardown must not leave the server behind: killed, the kernel
  // stops it (parent-death.ts); exiting, the handler below does.
  const command = diesWithThisProcess(binary, ['-http-addr', '127.0.0.1:', '-https-addr', '127.0.0.1:'], 'KILL');
  const child = spawn(command.file, command.args, {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  let output = '';
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    process.removeListener('exit', killOnExit);
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
  };

  return new Promise((resolve, reject) => {
    let settled = false;
    const fail = (why: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      void stop().then(() => reject(new Error(`${why}; its output:\n${output.trim().split('\n').slice(-10).join('\n')}`)));
    };
    const timer = setTimeout(() => fail(`stripe-mock did not listen within ${START_TIMEOUT_MS / 1000} s`), START_TIMEOUT_MS);
    const onData = (chunk: Buffer) => {
      output = (output + chunk.toString('utf8')).slice(-8000);
      const listening = /Listening for HTTP at address: (127\.0\.0\.1:\d+)/.exec(output);
      if (!listening || settled) return;
      settled = true;
      clearTimeout(timer);
      child.stdout.removeListener('data', onData);
      child.stderr.removeListener('data', onData);
      // Drained, so a chatty server never blocks on a full pipe.
      child.stdout.resume();
      child.stderr.resume();
      resolve({ url: `http://${listening[1]}`, stop });
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('error', (err) => fail(`stripe-mock could not be started: ${err.message}`));
    child.once('exit', (code, signal) => fail(`stripe-mock exited before it listened (${signal ?? `exit ${code}`})`));
  });
}
