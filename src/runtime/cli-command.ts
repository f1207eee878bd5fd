// How the operator CLIs (admin, seed) run a command against the database and end. Shared so
// that both keep the same contract with the shell and with scripts that call them: the database
// (perhaps an embedded server the command started) is always closed before the process exits,
// also on Ctrl-C, so no server is left behind; a failure is one line on stderr, never a stack
// trace; and the exit code says what happened (0 done, 1 failed, 2 usage, 130/143 interrupted).
import type { Config } from '../config.ts';
import type { Db } from '../../db/connection.ts';

export interface CommandDatabaseOptions {
  applicationName: string;
  poolMax: number;
  /** Said on SIGINT or SIGTERM, before the database is closed and the process exits 130 or 143. */
  interrupted: string;
  /** What `command` throws for a refusal the operator can act on: `error: <message>`, exit 1. */
  refusal: abstract new (...args: never[]) => Error;
}

/** Opens the database, runs `command` on it and closes it again; resolves to the exit code. */
export async function runOnDatabase(
  config: Config,
  say: (message: string) => void,
  opts: CommandDatabaseOptions,
  command: (db: Db) => Promise<number>,
): Promise<number> {
  // Loaded only now: knex and the embedded server are most of a CLI's start-up time, and a
  // usage error is reported before any of it.
  const { openDatabase } = await import('./database.ts');
  // Set once the database is open. An interrupt while an embedded server is still starting does
  // not stop it from here: a terminal's Ctrl-C reaches that server too (one process group).
  let close: () => Promise<void> = async () => {};
  const interrupted = (code: number) => {
    say(opts.interrupted);
    void close().finally(() => process.exit(code));
  };
  process.once('SIGINT', () => interrupted(130));
  process.once('SIGTERM', () => interrupted(143));
  const database = await openDatabase(config, say, { applicationName: opts.applicationName, poolMax: opts.poolMax });
  // Once only: an interrupt and the command's own ending may both get here.
  let closing: Promise<void> | undefined;
  close = () => (closing ??= database.close());
  try {
    return await command(database.db);
  } catch (err) {
    if (err instanceof opts.refusal) {
      say(`error: ${err.message}`);
      return 1;
    }
    throw err;
  } finally {
    await close();
  }
}

/** Exits with the code `main` resolves to; anything it throws is said in one line, exit 1. */
export function exitWith(main: Promise<number>, say: (message: string) => void): void {
  main.then(
    (code) => process.exit(code),
    (err) => {
      say(`error: ${err instanceof Error ? err.message : String(err)}`);
      process.exit(1);
    },
  );
}
