// `npm run diagnose:temporal-sqlite`: runs the SQLite driver check (sqlite-check/main.go) built
// with the driver version the Temporal CLI's own go.mod names and with the one we build it with
// (binary.ts), side by side, and prints how many reads whose context was alive each interrupted.
// Progress goes to stderr, the table to stdout. Knob: CHECK_SECONDS per database (default 10).
import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { findGo, runGo } from '../src/runtime/go-binary.ts';
import { TEMPORAL_CLI_OWN_SQLITE_VERSION, TEMPORAL_SQLITE_DRIVER } from './binary.ts';

interface CheckResult {
  database: string;
  reads: number;
  reads_interrupted: number;
  reads_other_errors: number;
  first_other_error?: string;
  cancelled_requests: number;
}

const SOURCE = fileURLToPath(new URL('./sqlite-check/main.go', import.meta.url));
const seconds = Number(process.env.CHECK_SECONDS ?? 10);

async function buildAndRun(go: string, version: string): Promise<CheckResult[]> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'tm-sqlite-check-build-'));
  try {
    await fs.copyFile(SOURCE, path.join(dir, 'main.go'));
    let stderr = '';
    for (const args of [['mod', 'init', 'ticket-market/sqlite-check'], ['get', `${TEMPORAL_SQLITE_DRIVER.module}@${version}`], ['build', '-o', 'check', '.']]) {
      const code = await runGo(go, args, { cwd: dir, env: process.env }, (d) => (stderr += d));
      if (code !== 0) throw new Error(`go ${args.join(' ')} failed (exit ${code}):\n${stderr.trim()}`);
    }
    console.error(`sqlite-check: built with ${TEMPORAL_SQLITE_DRIVER.module}@${version}; running ${seconds} s per database`);
    const { stdout } = await promisify(execFile)(path.join(dir, 'check'), [String(seconds)], { timeout: (seconds * 2 + 60) * 1000 });
    return stdout.trim().split('\n').map((line) => JSON.parse(line) as CheckResult);
  } finally {
    await fs.rm(dir, { recursive: true, force: true });
  }
}

const go = await findGo();
if (!go) {
  console.error('sqlite-check: no Go toolchain (the Temporal CLI is built with Go; see docs/operations.md)');
  process.exit(1);
}
const rows: string[] = [];
for (const [label, version] of [
  ['the CLI go.mod', TEMPORAL_CLI_OWN_SQLITE_VERSION],
  ['our build', TEMPORAL_SQLITE_DRIVER.version],
] as const) {
  for (const r of await buildAndRun(go, version)) {
    const share = r.reads ? ((100 * r.reads_interrupted) / r.reads).toFixed(2) : '-';
    rows.push(
      `| ${version} (${label}) | ${r.database} | ${r.reads.toLocaleString('en')} | ${r.reads_interrupted.toLocaleString('en')} (${share}%) | ` +
        `${r.reads_other_errors}${r.first_other_error ? ` (${r.first_other_error})` : ''} | ${r.cancelled_requests.toLocaleString('en')} |`,
    );
  }
}
console.log(`| driver | database | reads (context alive) | of them interrupted | other read errors | cancelled requests |`);
console.log(`|---|---|---:|---:|---:|---:|`);
for (const row of rows) console.log(row);
