// Reserved ports (issue 35): outside the kernel's ephemeral range, never handed to two processes
// at once, given back when their holder exits, a stale lock of a killed holder taken over, and a
// busy configured port named with the process that holds it.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../support/harness.ts';
import { RESERVATIONS_DIR, assertPortFree, canBind, ephemeralRange, portOwner, releasePort, reservableRanges, reservePort, tryReserve } from '../../src/runtime/ports.ts';

/** Starts the fixture; resolves with its ports once printed, and a way to let it exit. */
function reserveIn(count: number, hold: boolean) {
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/fixtures/reserve-ports.ts', String(count), hold ? 'hold' : ''], {
    cwd: PROJECT_ROOT,
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  const ports = new Promise<number[]>((resolve, reject) => {
    let out = '';
    child.stdout!.setEncoding('utf8').on('data', (d: string) => {
      out += d;
      if (out.includes('\n')) resolve(JSON.parse(out) as number[]);
    });
    child.once('exit', () => reject(new Error('exited before printing its ports')));
  });
  return { child, ports, exited, release: () => child.stdin!.end() };
}

const locked = (port: number) => fs.existsSync(path.join(RESERVATIONS_DIR, String(port)));

describe('reservePort', () => {
  it('four processes reserving 40 ports each at once: 160 distinct ports, none in the ephemeral range, each bindable, each lock gone when its holder exits', async () => {
    const [lo, hi] = ephemeralRange();
    const runs = Array.from({ length: 4 }, () => reserveIn(40, true));
    const all = (await Promise.all(runs.map((r) => r.ports))).flat();
    expect(all).toHaveLength(160);
    expect(new Set(all).size).toBe(160);
    for (const p of all) {
      expect(p < lo || p > hi, `${p} in ${lo}-${hi}`).toBe(true);
      expect(locked(p)).toBe(true);
    }
    // Held by live processes: this process can take none of them.
    for (const p of all.slice(0, 20)) expect(await tryReserve(p)).toBe(false);
    for (const r of runs) r.release();
    expect(await Promise.all(runs.map((r) => r.exited))).toEqual([0, 0, 0, 0]);
    expect(all.filter(locked)).toEqual([]);
  }, 60_000);

  it('a lock left by a holder killed with SIGKILL is taken over; a live holder keeps its port', async () => {
    const run = reserveIn(2, true);
    const [a, b] = await run.ports;
    expect(await tryReserve(a!)).toBe(false);
    run.child.kill('SIGKILL');
    await run.exited;
    expect(locked(a!)).toBe(true); // no exit hook ran
    expect(await tryReserve(a!)).toBe(true);
    expect(fs.readFileSync(path.join(RESERVATIONS_DIR, String(a)), 'utf8')).toBe(String(process.pid));
    releasePort(a!);
    expect(locked(a!)).toBe(false);
    expect(await tryReserve(b!)).toBe(true);
    releasePort(b!);
  }, 30_000);

  it('a port something listens on is never reserved, even with no lock', async () => {
    const blocker = net.createServer();
    const port = await reservePort();
    releasePort(port);
    await new Promise<void>((r) => blocker.listen(port, '127.0.0.1', () => r()));
    try {
      expect(await canBind(port)).toBe(false);
      expect(await tryReserve(port)).toBe(false);
      expect(locked(port)).toBe(false);
    } finally {
      await new Promise((r) => blocker.close(r));
    }
  });

  it('the reservable ranges never overlap the ephemeral range, whatever it is set to', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1024, max: 65_535 }), fc.integer({ min: 1024, max: 65_535 }), (x, y) => {
        const [lo, hi] = [Math.min(x, y), Math.max(x, y)];
        let ranges: [number, number][];
        try {
          ranges = reservableRanges([lo, hi]);
        } catch (err) {
          // Only when nothing is left: the ephemeral range covers [15000, 65535].
          expect((err as Error).message).toMatch(/no port outside the ephemeral range/);
          expect(lo <= 15_000 && hi >= 65_535).toBe(true);
          return;
        }
        for (const [a, b] of ranges) {
          expect(a).toBeLessThanOrEqual(b);
          expect(a).toBeGreaterThanOrEqual(15_000);
          expect(b).toBeLessThanOrEqual(65_535);
          expect(b < lo || a > hi).toBe(true);
        }
        // And nothing outside it is left out.
        const size = ranges.reduce((s, [a, b]) => s + b - a + 1, 0);
        const overlap = Math.max(0, Math.min(hi, 65_535) - Math.max(lo, 15_000) + 1);
        expect(size).toBe(65_535 - 15_000 + 1 - overlap);
      }),
    );
  });
});

describe('a busy configured port', () => {
  it('is named with its variable and the process that listens on it', async () => {
    const port = await reservePort();
    const holder = spawn(process.execPath, ['-e', `require('net').createServer().listen(${port}, '127.0.0.1', () => console.log('up'))`], { stdio: ['ignore', 'pipe', 'inherit'] });
    try {
      await new Promise((r) => holder.stdout!.once('data', r));
      expect(portOwner(port)).toMatch(new RegExp(`^pid ${holder.pid} \\(.*node.*-e`));
      await expect(assertPortFree(port, 'SIM_PORT', '127.0.0.1')).rejects.toThrow(
        new RegExp(`^port ${port} \\(SIM_PORT\\) is already in use by pid ${holder.pid} \\(.*\\); set SIM_PORT to a free port$`),
      );
    } finally {
      holder.kill();
      releasePort(port);
    }
    await new Promise((r) => holder.once('exit', r));
    expect(portOwner(port)).toBeNull();
    await expect(assertPortFree(port, 'SIM_PORT', '127.0.0.1')).resolves.toBeUndefined();
  });
});
