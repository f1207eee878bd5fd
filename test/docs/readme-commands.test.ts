// The `curl` examples of the README's "Calling it" and of docs/market-data.md, run as a reader runs
// them: bash and curl, the text as written, against the service started as `npm start` starts it
// (src/main.ts: the demo account and its key file, the demo catalog, the simulator, the gateway,
// the metrics port, the stream and the Temporal workers in one process). Only the ports differ:
// the service listens on free loopback ports, and the examples' 8080, 8090 and 9464 are rewritten
// to them. It runs on a database of its own, so the demo account is the first and its first
// watchlist item is item 1, as on a fresh `npm start`; Temporal is the run's server, on task
// queues of its own.
//
// Each example must answer the status listed in expectations(); an example that is not listed
// fails, so a new example comes with its expected answer. A GET that answers otherwise is asked
// again for up to a minute: `/events/ping` waits for the worker's first poll, and the statistics
// for the tracker's first scrape ("within seconds", docs/market-data.md).
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createScratchDatabase, type ScratchDatabase } from '../../db/scratch.ts';
import { reservePort } from '../../src/runtime/ports.ts';
import { PROJECT_ROOT, databaseUrl } from '../support/harness.ts';
import { temporalAddress, uniqueTaskQueue } from '../support/temporal.ts';
import { codeBlocks, documentationFiles, readDoc } from './markdown.ts';

/** The files whose examples run, in this order (docs/market-data.md uses the README's KEY). */
const FILES = ['README.md', 'docs/market-data.md'];

/**
 * `curl` examples elsewhere that do not run here, and why. The test fails on any other, so an
 * example added to another page is either run (add the page to FILES) or listed here.
 */
const NOT_RUN: Record<string, string> = {
  'docs/api-documents.md': 'it writes /tmp/openapi.json for `npx @redocly/cli`, which is fetched from the npm registry',
};

const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium';

interface Expectation {
  status: number;
  /** Checks on the body beyond the status. */
  body?: (text: string) => void;
}

/** What each example answers; the first pattern that matches the example's text applies. */
function expectations(hasChromium: boolean): [RegExp, Expectation | null][] {
  return [
    [/^KEY=\$\(cat data\/demo-api-key\)$/, null], // no request
    [/localhost:8080\/usage /, { status: 200, body: (t) => expect(JSON.parse(t)).toMatchObject({ status: 'active' }) }],
    [/localhost:8080\/svc\/data\/ping /, { status: 200 }],
    [/localhost:8080\/events\/ping /, { status: 200, body: (t) => expect(JSON.parse(t)).toEqual({ status: 'ok' }) }],
    [/localhost:8080\/events\/platforms /, { status: 200, body: (t) => expect(Object.keys(JSON.parse(t).platforms)).toHaveLength(11) }],
    [/\/events\/scrape .*"platform": "pf_03"/s, { status: 200, body: (t) => expect(JSON.parse(t)).toMatchObject({ success: true, platform: 'pf_03' }) }],
    [
      /\/events\/scrape .*"platform": "pf_01"/s,
      // Without Debian's chromium pf_01 cannot be scraped: 500 at once, naming the browser
      // (docs/operations.md, "First run without Chromium"). .ci/run installs it.
      hasChromium
        ? { status: 200, body: (t) => expect(JSON.parse(t)).toMatchObject({ success: true, platform: 'pf_01' }) }
        : { status: 500, body: (t) => expect(t).toMatch(/Chromium/) },
    ],
    [/localhost:8090\/_sim\/events/, { status: 200 }],
    [/localhost:8080\/watchlist .*-d '\{"website"/s, { status: 201, body: (t) => expect(JSON.parse(t)).toMatchObject({ id: 1, website: 'pf_01' }) }],
    [/^curl -s localhost:8080\/watchlist -H "apikey: \$KEY"$/, { status: 200 }],
    [/-X PATCH localhost:8080\/watchlist\/1 /, { status: 200, body: (t) => expect(JSON.parse(t)).toMatchObject({ id: 1, change_type: 'price_decrease' }) }],
    [/-X DELETE localhost:8080\/watchlist\/1 /, { status: 204 }],
    [/localhost:8080\/openapi\.json/, { status: 200, body: (t) => expect(JSON.parse(t).openapi).toMatch(/^3\.1/) }],
    [/localhost:8080\/asyncapi\.json/, { status: 200, body: (t) => expect(JSON.parse(t).asyncapi).toMatch(/^3\./) }],
    [/localhost:8080\/docs /, { status: 200, body: (t) => expect(t.trim()).toBe('<title>HTTP API: Ticket market service reference</title>') }],
    [/localhost:9464\/metrics/, { status: 200, body: (t) => expect(t).toContain('gateway_requests_total') }],
    [/localhost:8080\/svc\/data\/search /, { status: 200, body: (t) => expect(JSON.parse(t)).toHaveProperty('nbHits') }],
    [/\/svc\/data\/events\/add .*"marketplace": "marketplace_[ab]"/s, { status: 201, body: (t) => expect(JSON.parse(t)).toMatchObject({ status: 'pending' }) }],
    [/^ARTIST_URL=/, { status: 200 }], // the request inside $(...)
    [/\/svc\/data\/marketplace_a\/E-104729 /, { status: 200, body: (t) => expect(JSON.parse(t).event.artist.url).toMatch(/^https:/) }],
    [/\/svc\/data\/sales\/marketplace_a\/E-104729\?/, { status: 200, body: (t) => expect(JSON.parse(t).sales.length).toBeGreaterThan(0) }],
    [/\/svc\/data\/marketplace_b\/0B005F2A9B1E4D2C\?/, { status: 200 }],
    [/\/svc\/data\/artist /, { status: 200, body: (t) => expect(JSON.parse(t)).toHaveProperty('artist.name') }],
  ];
}

interface Example {
  file: string;
  line: number;
  /** The command as written (continuation lines joined by bash itself). */
  text: string;
}

/** The commands of a file's `sh` blocks that hold a `curl`, with the assignments they rely on. */
function examples(file: string): Example[] {
  const out: Example[] = [];
  for (const block of codeBlocks(readDoc(file))) {
    if (block.lang !== 'sh' || !/\bcurl /.test(block.text)) continue;
    let current: { line: number; lines: string[] } | null = null;
    block.text.split('\n').forEach((line, i) => {
      if (!current) {
        if (line.trim() === '' || line.trim().startsWith('#')) return;
        current = { line: block.line + 1 + i, lines: [] };
      }
      current.lines.push(line);
      if (!/\\\s*$/.test(line)) {
        out.push({ file, line: current.line, text: current.lines.join('\n') });
        current = null;
      }
    });
  }
  return out;
}

function matchExpectation(table: [RegExp, Expectation | null][], text: string): Expectation | null | undefined {
  return table.find(([re]) => re.test(text))?.[1];
}

/** A GET (no body, no other method) may be asked again while what it reads is not there yet. */
function isRepeatable(text: string): boolean {
  return !/ -X /.test(text) && (!/ -d /.test(text) || / -G /.test(text));
}

interface Run {
  statuses: number[];
  stdout: string;
  stderr: string;
}

const STATUS_MARK = '@@status ';

describe('the README\'s curl examples, against the service as npm start runs it', () => {
  let dir = '';
  let scratch: ScratchDatabase | null = null;
  let service: ChildProcess | null = null;
  let exited: Promise<unknown> = Promise.resolve();
  let output = '';
  let ports = { http: 0, sim: 0, metrics: 0 };
  const assignments: string[] = [];
  let table: [RegExp, Expectation | null][] = [];

  /** The example with the service's ports in place of the documented ones. */
  const localise = (text: string) =>
    text
      .replaceAll('localhost:8080', `localhost:${ports.http}`)
      .replaceAll('localhost:8090', `localhost:${ports.sim}`)
      .replaceAll('localhost:9464', `localhost:${ports.metrics}`);

  /** Runs one example in bash after the assignments before it; curl reports each status on stderr. */
  function runExample(text: string): Promise<Run> {
    const script = [
      'set -o pipefail',
      `curl() { command curl -w '%{stderr}${STATUS_MARK}%{http_code}\\n' "$@"; }`,
      ...assignments.map((a) => `{ ${localise(a)}; } 2>/dev/null`),
      localise(text),
    ].join('\n');
    return new Promise((resolve, reject) => {
      const child = spawn('bash', ['-c', script], { cwd: dir, env: process.env, stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
      child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
      child.once('error', reject);
      child.once('close', () => {
        const statuses = stderr
          .split('\n')
          .filter((l) => l.startsWith(STATUS_MARK))
          .map((l) => Number(l.slice(STATUS_MARK.length)));
        resolve({ statuses, stdout, stderr });
      });
    });
  }

  beforeAll(async () => {
    const hasChromium = await fs.access(CHROMIUM, fs.constants.X_OK).then(
      () => true,
      () => false,
    );
    table = expectations(hasChromium);
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'tm-readme-'));
    scratch = await createScratchDatabase('tm_readme', databaseUrl());
    ports = { http: await reservePort(), sim: await reservePort(), metrics: await reservePort() };
    const env: NodeJS.ProcessEnv = { ...process.env };
    // Nothing of the caller's configuration but what the test sets below.
    for (const k of Object.keys(env)) {
      if (/^(TEMPORAL_|STRIPE_|BILLING_|WEBHOOK_|SCRAPE_|MONITOR_|STREAM_|SIM_|PF_\d|MARKETPLACE_|TRACK_|RUN_)/.test(k) && k !== 'TEMPORAL_CLI_PATH') delete env[k];
    }
    for (const k of ['DATABASE_URL', 'DATA_DIR', 'PORT', 'HOST', 'METRICS_PORT', 'EMBEDDED_PG_PORT', 'DEMO_ACCOUNT', 'LOG_LEVEL']) delete env[k];
    Object.assign(env, {
      DATABASE_URL: scratch.url,
      DATA_DIR: path.join(dir, 'data'), // the examples read data/demo-api-key from `dir`
      HOST: '127.0.0.1',
      PORT: String(ports.http),
      METRICS_PORT: String(ports.metrics),
      SIM_PORT: String(ports.sim),
      STREAM_PORT: String(await reservePort()),
      TEMPORAL_ADDRESS: temporalAddress(),
      SCRAPE_TASK_QUEUE: uniqueTaskQueue('readme-scrapes'),
      MONITOR_TASK_QUEUE: uniqueTaskQueue('readme-monitors'),
      WEBHOOK_TASK_QUEUE: uniqueTaskQueue('readme-webhooks'),
    });
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], { cwd: PROJECT_ROOT, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    service = child;
    exited = new Promise((resolve) => child.once('exit', resolve));
    child.stdout!.setEncoding('utf8').on('data', (d: string) => (output += d));
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (output += d));
    const deadline = Date.now() + 100_000;
    while (!/"msg":"worker ready"/.test(output)) {
      if (child.exitCode !== null) throw new Error(`the service exited:\n${output}`);
      if (Date.now() > deadline) throw new Error(`the service's workers were not ready in time:\n${output}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }, 120_000);

  afterAll(async () => {
    if (service && service.exitCode === null && service.signalCode === null) {
      process.kill(-service.pid!, 'SIGINT'); // Ctrl-C
      const timer = setTimeout(() => process.kill(-service!.pid!, 'SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
    }
    await scratch?.drop();
    if (dir) await fs.rm(dir, { recursive: true, force: true });
  }, 30_000);

  it('runs every page with curl examples, or says why not', () => {
    const withCurl = documentationFiles().filter((f) => codeBlocks(readDoc(f)).some((b) => /(^|\n)\s*(\w+=\$\()?curl /.test(b.text)));
    expect(withCurl.filter((f) => !FILES.includes(f) && !(f in NOT_RUN))).toEqual([]);
  });

  const all = FILES.flatMap(examples);
  it('finds the examples', () => {
    expect(all.filter((e) => e.file === 'README.md').length).toBeGreaterThanOrEqual(10);
    expect(all.filter((e) => e.file === 'docs/market-data.md').length).toBeGreaterThanOrEqual(5);
  });

  for (const example of all) {
    const title = `${example.file}:${example.line}: ${example.text.split('\n')[0]!.slice(0, 100)}`;
    it(
      title,
      async () => {
        const expected = matchExpectation(table, example.text);
        if (expected === undefined) throw new Error(`no expected answer for this example; add one to expectations():\n${example.text}`);
        if (expected === null) {
          // An assignment with no request (KEY=$(cat ...)): it must work, and it applies to what follows.
          const run = await runExample(`${example.text} && printf '%s' "$KEY"`);
          expect(run.stdout, run.stderr).toMatch(/^tmk_/);
          assignments.push(example.text);
          return;
        }
        const deadline = Date.now() + 60_000;
        let run = await runExample(example.text);
        while (isRepeatable(example.text) && !(run.statuses.length > 0 && run.statuses.every((s) => s === expected.status)) && Date.now() < deadline) {
          await new Promise((r) => setTimeout(r, 1_000));
          run = await runExample(example.text);
        }
        expect(run.statuses.length, run.stderr).toBeGreaterThan(0);
        expect(run.statuses, `${run.stdout}\n${run.stderr}`).toEqual(run.statuses.map(() => expected.status));
        if (/^[A-Z_]+=\$\(/.test(example.text)) assignments.push(example.text);
        else expected.body?.(run.stdout.replace(/^HTTP\/[\s\S]*?\r\n\r\n/, ''));
      },
      90_000,
    );
  }
});
