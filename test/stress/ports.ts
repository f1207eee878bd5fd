// `npm run stress:ports`: the stress check of issue 35. Runs the test files that start servers on
// ports nobody configured (the start tests, the Temporal and embedded-PostgreSQL files) many times
// in parallel, while a port-hungry neighbour keeps opening outgoing connections and port-0
// listeners beside them (as other test files, browsers and clients do on a busy machine), and
// counts the failures. Pointed at an older checkout (STRESS_CHECKOUT), it shows what the fix
// changed: the same files, the same neighbour, the other code.
//
//   STRESS_CHECKOUT   the checkout whose tests run (default: this one); it needs node_modules
//   STRESS_PARALLEL   vitest runs at once (default 3)
//   STRESS_ROUNDS     runs of each lane, one after the other (default 2)
//   STRESS_FILES      space-separated test files (default below)
//   STRESS_OPEN       outgoing connections the neighbour keeps open (default 4000)
//   STRESS_LISTEN     port-0 listeners it keeps open (default 400)
//
// Everything stays on 127.0.0.1. The neighbour is bounded: it holds at most STRESS_OPEN
// connections and STRESS_LISTEN listeners, renews each after about a second, and stops when the
// last run ends (or after 40 minutes). Exits 1 when any test failed, 2 when the neighbour did not
// run (a check that could pass by stressing nothing).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

// Not harness.ts's PROJECT_ROOT: that module loads vitest, which only runs inside a test run.
const checkout = path.resolve(process.env.STRESS_CHECKOUT || new URL('../../', import.meta.url).pathname);
const parallel = Number(process.env.STRESS_PARALLEL ?? 3);
const rounds = Number(process.env.STRESS_ROUNDS ?? 2);
const files = (process.env.STRESS_FILES || 'test/start.test.ts test/temporal/dev-server.test.ts test/db/embedded.test.ts test/faults/temporal-outage.test.ts').split(/\s+/).filter(Boolean);
const keepOpen = Number(process.env.STRESS_OPEN ?? 4_000);
const keepListening = Number(process.env.STRESS_LISTEN ?? 400);
const HOLD_MS = 1_000;
const DEADLINE_MS = 40 * 60_000;

interface RunResult {
  lane: number;
  round: number;
  passed: number;
  failed: number;
  /** Failed tests whose messages speak of a port taken. */
  portFailures: string[];
  otherFailures: string[];
  ms: number;
  exitCode: number | null;
}

/** The neighbour: outgoing connections and port-0 listeners, each renewed after HOLD_MS. */
function startNeighbour() {
  const sink = net.createServer((s) => s.on('error', () => {}).resume());
  let stopped = false;
  const stats = { connections: 0, listeners: 0, errors: 0 };
  let open = 0;
  let listening = 0;
  const connectOne = (port: number) => {
    if (stopped || open >= keepOpen) return;
    open++;
    const s = net.connect({ host: '127.0.0.1', port });
    s.on('error', () => stats.errors++);
    s.once('connect', () => {
      stats.connections++;
      setTimeout(() => s.destroy(), HOLD_MS);
    });
    s.once('close', () => {
      open--;
      connectOne(port);
    });
  };
  const listenOne = () => {
    if (stopped || listening >= keepListening) return;
    listening++;
    const l = net.createServer();
    l.once('error', () => {
      stats.errors++;
      listening--;
      setTimeout(listenOne, 100);
    });
    l.listen(0, '127.0.0.1', () => {
      stats.listeners++;
      setTimeout(
        () =>
          l.close(() => {
            listening--;
            listenOne();
          }),
        HOLD_MS,
      );
    });
  };
  const ready = new Promise<void>((resolve) =>
    sink.listen(0, '127.0.0.1', () => {
      const { port } = sink.address() as net.AddressInfo;
      // Ramp up over a second, not in one burst.
      for (let i = 0; i < keepOpen; i++) setTimeout(() => connectOne(port), (i * 1000) / keepOpen);
      for (let i = 0; i < keepListening; i++) setTimeout(listenOne, (i * 1000) / keepListening);
      resolve();
    }),
  );
  return {
    ready,
    stats,
    stop: () => {
      stopped = true;
      sink.close();
    },
  };
}

function vitestRun(lane: number, round: number): Promise<RunResult> {
  const report = path.join(os.tmpdir(), `tm-stress-ports-${process.pid}-${lane}-${round}.json`);
  const started = Date.now();
  return new Promise((resolve) => {
    const env = { ...process.env };
    delete env.DATABASE_URL;
    const child = spawn(path.join(checkout, 'node_modules/.bin/vitest'), ['run', ...files, '--reporter=json', `--outputFile=${report}`], {
      cwd: checkout,
      env,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr = (stderr + d).slice(-20_000)));
    child.once('exit', (code) => {
      const result: RunResult = { lane, round, passed: 0, failed: 0, portFailures: [], otherFailures: [], ms: Date.now() - started, exitCode: code };
      try {
        const r = JSON.parse(fs.readFileSync(report, 'utf8')) as {
          numPassedTests: number;
          numFailedTests: number;
          testResults: { name: string; message: string; assertionResults: { fullName: string; status: string; failureMessages: string[] }[] }[];
        };
        result.passed = r.numPassedTests;
        result.failed = r.numFailedTests;
        for (const file of r.testResults) {
          const failures = file.assertionResults.filter((a) => a.status === 'failed');
          // A suite that failed in a hook has no failed assertion of its own: count it once.
          if (failures.length === 0 && file.message) failures.push({ fullName: `${path.relative(checkout, file.name)} (suite)`, status: 'failed', failureMessages: [file.message] });
          for (const a of failures) {
            const text = a.failureMessages.join('\n');
            const line = `${a.fullName}: ${text.split('\n')[0]!.slice(0, 200)}`;
            if (/EADDRINUSE|address already in use|is already in use|was taken before/i.test(text)) result.portFailures.push(line);
            else result.otherFailures.push(line);
          }
        }
        if (code !== 0 && result.failed === 0) result.otherFailures.push(`vitest exited ${code} with no failed test: ${stderr.split('\n').slice(-5).join(' | ')}`);
      } catch {
        result.otherFailures.push(`no report (vitest exited ${code}): ${stderr.split('\n').slice(-5).join(' | ')}`);
      }
      fs.rmSync(report, { force: true });
      resolve(result);
    });
  });
}

async function main(): Promise<void> {
  if (!fs.existsSync(path.join(checkout, 'node_modules/.bin/vitest'))) throw new Error(`${checkout} has no node_modules: run npm install there first`);
  const commit = await new Promise<string>((resolve) => {
    const git = spawn('git', ['-C', checkout, 'log', '-1', '--format=%h %s'], { stdio: ['ignore', 'pipe', 'ignore'] });
    let out = '';
    git.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    git.once('exit', () => resolve(out.trim().slice(0, 80)));
  });
  console.error(`stress:ports on ${checkout} (${commit})`);
  console.error(`  ${parallel} vitest runs at once, ${rounds} rounds each, of ${files.join(' ')}`);
  console.error(`  neighbour: ${keepOpen} outgoing connections and ${keepListening} port-0 listeners on 127.0.0.1, each renewed every ${HOLD_MS} ms`);
  const neighbour = startNeighbour();
  await neighbour.ready;
  const deadline = setTimeout(() => {
    console.error(`stress:ports: past ${DEADLINE_MS / 60_000} minutes; stopping`);
    process.exit(3);
  }, DEADLINE_MS);
  const progress = setInterval(() => {
    const s = neighbour.stats;
    console.error(`  ... neighbour so far: ${s.connections} connections, ${s.listeners} listeners`);
  }, 60_000);
  const results: RunResult[] = [];
  await Promise.all(
    Array.from({ length: parallel }, async (_, lane) => {
      for (let round = 0; round < rounds; round++) {
        const r = await vitestRun(lane, round);
        results.push(r);
        console.error(`  run ${lane}.${round}: ${r.passed} passed, ${r.failed} failed (${r.portFailures.length} of a port taken) in ${Math.round(r.ms / 1000)} s`);
        for (const f of [...r.portFailures, ...r.otherFailures]) console.error(`    ${f}`);
      }
    }),
  );
  neighbour.stop();
  clearInterval(progress);
  clearTimeout(deadline);

  const sum = (f: (r: RunResult) => number) => results.reduce((s, r) => s + f(r), 0);
  const s = neighbour.stats;
  console.log('');
  console.log(`| checkout | runs | tests passed | tests failed | of a port taken | other |`);
  console.log(`|---|---:|---:|---:|---:|---:|`);
  console.log(`| ${commit} | ${results.length} | ${sum((r) => r.passed)} | ${sum((r) => r.failed)} | ${sum((r) => r.portFailures.length)} | ${sum((r) => r.otherFailures.length)} |`);
  console.log('');
  console.log(`neighbour: ${s.connections} outgoing connections and ${s.listeners} port-0 listeners opened`);
  // A neighbour that opened nothing stressed nothing: no verdict from such a run.
  if (s.connections < keepOpen || s.listeners < keepListening) {
    console.log('verdict: NO VERDICT (the neighbour did not run at its load)');
    process.exit(2);
  }
  const failed = results.some((r) => r.failed > 0 || r.portFailures.length > 0 || r.otherFailures.length > 0);
  const ranNothing = sum((r) => r.passed) === 0;
  console.log(`verdict: ${failed || ranNothing ? 'FAIL' : 'PASS'} (${ranNothing ? 'no test ran' : `${sum((r) => r.failed)} failed`})`);
  process.exit(failed || ranNothing ? 1 : 0);
}

main().catch((err: unknown) => {
  console.error('stress:ports failed:', err instanceof Error ? err.message : err);
  process.exit(1);
});
