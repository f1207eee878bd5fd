// Progress lines for a running seed (`npm run seed`, `npm run bench:search`): the phase, how far
// it is, its rate and rows per second, and an ETA; at most one line a second, on stderr.
import type { SeedProgress } from './seed.ts';

export function formatDuration(ms: number): string {
  const s = Math.round(ms / 1000);
  return s < 120 ? `${s} s` : `${Math.floor(s / 60)} min ${s % 60} s`;
}

/** A SeedOptions.onProgress that writes one line per second at most, and each phase's end. */
export function progressPrinter(write: (line: string) => void = (line) => process.stderr.write(`${line}\n`)): (p: SeedProgress) => void {
  let last = 0;
  let phaseStart = { phase: '', at: 0, done: 0 };
  return (p) => {
    if (p.phase !== phaseStart.phase) phaseStart = { phase: p.phase, at: p.elapsedMs, done: p.done };
    const finished = p.done >= p.total;
    if (!finished && p.elapsedMs - last < 1_000) return;
    last = p.elapsedMs;
    const seconds = Math.max(0.001, (p.elapsedMs - phaseStart.at) / 1000);
    const rate = (p.done - phaseStart.done) / seconds;
    const eta = rate > 0 ? ((p.total - p.done) / rate) * 1000 : NaN;
    const rowsPerSec = p.rows / Math.max(0.001, p.elapsedMs / 1000);
    const pct = p.total ? Math.floor((100 * p.done) / p.total) : 100;
    write(
      `seed: ${p.phase} ${p.done.toLocaleString('en-US')}/${p.total.toLocaleString('en-US')} (${pct}%)` +
        (p.phase === 'analyze' ? '' : `, ${Math.round(rate).toLocaleString('en-US')}/s, ${Math.round(rowsPerSec).toLocaleString('en-US')} rows/s`) +
        (finished || !Number.isFinite(eta) ? '' : `, ETA ${formatDuration(eta)}`) +
        `, ${formatDuration(p.elapsedMs)} elapsed`,
    );
  };
}
