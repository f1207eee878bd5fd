// The bench's safety net, in a process of its own (detached: a Ctrl-C does not reach it): the
// bench tells it, one JSON line on stdin at a time, what it started (the scratch database, the
// simulator, the Temporal server and its data directory, each worker's process group). When the
// bench ends its stdin after {"done":true}, its own cleanup ran and the janitor just exits; when
// stdin closes without it (the bench was SIGKILLed, e.g. by tsx's signal relay when it answered
// a Ctrl-C late, or ran out of memory), the janitor kills what is still running and drops the
// database. A process is only killed while its command line still says it is the one started.
// Plain JavaScript, so it starts without tsx.
import fs from 'node:fs';
import pg from 'pg';

const started = { done: false, processes: [], groups: [], dirs: [], db: null };
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => {});

const stillOurs = (pid, match) => {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(match);
  } catch {
    return false;
  }
};
const kill = (pid, signal) => {
  try {
    process.kill(pid, signal);
  } catch {
    // gone already
  }
};

async function sweep() {
  if (started.done) process.exit(0);
  for (const { pid, match } of started.groups) if (stillOurs(pid, match)) kill(-pid, 'SIGKILL');
  for (const { pid, match } of started.processes) if (stillOurs(pid, match)) kill(pid, 'SIGKILL');
  for (const dir of started.dirs) fs.rmSync(dir, { recursive: true, force: true });
  if (started.db) {
    const client = new pg.Client({ connectionString: started.db.base });
    try {
      await client.connect();
      await client.query(`DROP DATABASE IF EXISTS ${started.db.name} WITH (FORCE)`);
    } catch (err) {
      process.stderr.write(`bench janitor: could not drop ${started.db.name}: ${err.message}\n`);
    } finally {
      await client.end().catch(() => {});
    }
  }
  process.stderr.write('bench janitor: the bench ended without its cleanup; stopped what it had started\n');
  process.exit(0);
}

let buffer = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (chunk) => {
  buffer += chunk;
  for (let nl = buffer.indexOf('\n'); nl >= 0; nl = buffer.indexOf('\n')) {
    const line = buffer.slice(0, nl);
    buffer = buffer.slice(nl + 1);
    const m = JSON.parse(line);
    if (m.done) started.done = true;
    if (m.process) started.processes.push(m.process);
    if (m.group) started.groups.push(m.group);
    if (m.dir) started.dirs.push(m.dir);
    if (m.db) started.db = m.db;
  }
});
process.stdin.on('end', () => void sweep());
process.stdin.on('error', () => void sweep());
