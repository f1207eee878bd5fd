// The embedded PostgreSQL behind `npm start`, the admin CLI and `npm test` without DATABASE_URL.
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runTs } from '../support/harness.ts';
import { canConnect } from '../../db/embedded.ts';
import { freePort } from '../../src/runtime/ports.ts';


describe('embedded PostgreSQL', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'tm-embedded-'));
    await fs.chmod(dir, 0o755); // the server runs as `postgres` when we are root
  });
  afterAll(async () => {
    await fs.rm(dir, { recursive: true, force: true });
  });

  // The package's own exit hook threw at a natural exit and turned exit 0 into 1, which made
  // `npm test` fail on machines without DATABASE_URL although every test had passed.
  it('a process that starts, uses and stops it, then ends by itself, exits 0 and leaves no server', async () => {
    // A random port could be one another test holds at that moment: ask the OS for a free one.
    const port = await freePort();
    const r = await runTs('test/fixtures/embedded-round-trip.ts', [dir, String(port)], { ...process.env });
    expect(r.stderr).not.toMatch(/TypeError|is not a function/);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ answer: 42 });
    expect(await canConnect(port)).toBe(false);
  }, 60_000);
});
