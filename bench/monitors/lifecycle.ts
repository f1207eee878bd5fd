// Everything the bench starts is registered here as it starts, and stopped in reverse order
// at the end, on a failure, on Ctrl-C or SIGTERM, and after a stray exception, so no child
// process, server or scratch database outlives the run. A Ctrl-C reaches this process several
// times at once (the terminal's process group, npm and tsx each relay it): repeats within 2 s
// are the same Ctrl-C; one after that exits at once. Should the bench die without cleaning up
// (SIGKILL), the janitor process (janitor.mjs) stops what it was told about.
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { progress } from './support.ts';

const STEP_TIMEOUT_MS = 30_000;
const SAME_SIGNAL_MS = 2_000;
const JANITOR = fileURLToPath(new URL('./janitor.mjs', import.meta.url));

/** What the janitor is told about (see janitor.mjs): `match` is a piece of the process's command line. */
export type Started =
  | { process: { pid: number; match: string } }
  | { group: { pid: number; match: string } }
  | { dir: string }
  | { db: { base: string; name: string } };

export class Lifecycle {
  interrupted = false;
  private readonly steps: { name: string; stop: () => Promise<unknown> }[] = [];
  private cleaning: Promise<void> | null = null;
  private readonly janitor: ChildProcess;
  private interruptedAt = 0;

  constructor() {
    this.janitor = spawn(process.execPath, [JANITOR], { detached: true, stdio: ['pipe', 'ignore', 'inherit'] });
    this.janitor.unref();
    this.janitor.stdin!.on('error', () => {});
    for (const [signal, code] of [
      ['SIGINT', 130],
      ['SIGTERM', 143],
    ] as const) {
      process.on(signal, () => {
        if (this.interrupted) {
          // The same Ctrl-C relayed again; a later one: stop waiting for the cleanup.
          if (Date.now() - this.interruptedAt > SAME_SIGNAL_MS) process.exit(code);
          return;
        }
        this.interrupted = true;
        this.interruptedAt = Date.now();
        progress(`${signal}: stopping and cleaning up (again to exit at once)...`);
        void this.cleanup().finally(() => process.exit(code));
      });
    }
    // A late error from a closed connection must not cut the cleanup short.
    process.on('uncaughtException', (err) => {
      progress(`uncaught: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
      void this.cleanup().finally(() => process.exit(1));
    });
  }

  /** Tells the janitor about something started, for the case the bench dies without its cleanup. */
  started(what: Started): void {
    this.janitor.stdin!.write(`${JSON.stringify(what)}\n`);
  }

  /** Registers how to stop something just started. */
  onCleanup(name: string, stop: () => Promise<unknown>): void {
    this.steps.push({ name, stop });
  }

  /** Throws when a signal asked the run to stop (called between steps of long phases). */
  check(): void {
    if (this.interrupted) throw new Error('interrupted');
  }

  /**
   * A bench's end: once `run` settles, everything is stopped, then its report goes to stdout
   * (exit 0), or its error to stderr unless a signal asked the run to stop (exit 1).
   */
  finish(run: Promise<string>): void {
    run.then(
      async (report) => {
        await this.cleanup();
        console.log(report);
        // Non-zero when the report found a target missed (report.ts, targetsSection).
        process.exit(process.exitCode ?? 0);
      },
      async (err: unknown) => {
        if (!this.interrupted) console.error(err);
        await this.cleanup();
        process.exit(1);
      },
    );
  }

  cleanup(): Promise<void> {
    return (this.cleaning ??= (async () => {
      for (const step of this.steps.splice(0).reverse()) {
        let timer: NodeJS.Timeout | undefined;
        const timeout = new Promise<void>((resolve) => {
          timer = setTimeout(() => {
            progress(`cleanup: ${step.name} did not stop within ${STEP_TIMEOUT_MS / 1000} s; going on`);
            resolve();
          }, STEP_TIMEOUT_MS);
        });
        await Promise.race([step.stop().catch((err: unknown) => progress(`cleanup: ${step.name} failed: ${String(err)}`)), timeout]);
        clearTimeout(timer);
      }
      // Cleaned up (or tried to): the janitor has nothing to do.
      this.janitor.stdin!.end(`${JSON.stringify({ done: true })}\n`);
    })());
  }
}
