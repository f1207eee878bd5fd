// Finds the `temporal` CLI (which runs `temporal server start-dev`) without touching the internet:
// TEMPORAL_CLI_PATH, else a per-machine cache outside the checkout, else a one-time `go install`
// through the Go module proxy into that cache (src/runtime/go-binary.ts does the provisioning).
// Returns null when none of that is possible, which means "let @temporalio/testing download the
// server itself" (needs internet; see dev-server.ts).
import { type GoTool, type ResolveGoBinaryOptions, cachedBinaryPath, resolveGoBinary } from '../src/runtime/go-binary.ts';

/** Later tags carry a `replace` directive in their go.mod, so `go install` refuses them. */
export const TEMPORAL_CLI_VERSION = 'v1.5.1';
export const TEMPORAL_CLI_MODULE = 'github.com/temporalio/cli/cmd/temporal';
/** The toolchain the tag was built with, fetched through the proxy if the machine's Go fails. */
export const FALLBACK_GO_TOOLCHAIN = 'go1.25.0';
/**
 * The SQLite driver the dev server is built with. v1.5.1's go.mod names modernc.org/sqlite
 * v1.34.1, whose context handling checks "still running?" and then calls sqlite3_interrupt
 * without a lock between the two: a request that times out can interrupt the next statement on
 * Temporal's single SQLite connection, which belongs to another request (`interrupted (9)`; a
 * namespace read that fails so is reported by Temporal v1.29 as "Namespace default was not
 * found", and every worker started then dies). v1.62.0 holds a lock across both (issue 22;
 * docs/testing.md "The run's Temporal server").
 */
export const TEMPORAL_SQLITE_DRIVER = { module: 'modernc.org/sqlite', version: 'v1.62.0' } as const;
/** The driver version v1.5.1's own go.mod names (what `go install` alone would build with). */
export const TEMPORAL_CLI_OWN_SQLITE_VERSION = 'v1.34.1';

export const TEMPORAL_CLI: GoTool = {
  label: 'the Temporal CLI',
  module: TEMPORAL_CLI_MODULE,
  version: TEMPORAL_CLI_VERSION,
  requires: { [TEMPORAL_SQLITE_DRIVER.module]: TEMPORAL_SQLITE_DRIVER.version },
  binaryName: 'temporal',
  cacheDirName: 'tm-temporal',
  pathEnv: 'TEMPORAL_CLI_PATH',
  cacheEnv: 'TEMPORAL_CLI_CACHE',
  fallbackToolchain: FALLBACK_GO_TOOLCHAIN,
  buildTime: 'a few minutes',
  fallback: "falling back to the SDK's download",
};

export interface ResolveTemporalCliOptions extends Omit<ResolveGoBinaryOptions, 'explicitPath'> {
  /** TEMPORAL_CLI_PATH: used as is; it must exist and be executable. */
  cliPath?: string;
}

/** The cached binary's path: `<cache>/tm-temporal/<version>+sqlite-<driver version>/temporal`. */
export function cachedCliPath(env: NodeJS.ProcessEnv = process.env): string {
  return cachedBinaryPath(TEMPORAL_CLI, env);
}

export function resolveTemporalCli(opts: ResolveTemporalCliOptions = {}): Promise<string | null> {
  const { cliPath, ...rest } = opts;
  // Callers pass TEMPORAL_CLI_PATH from their validated config (or not at all), so the
  // environment's own value is not consulted a second time.
  return resolveGoBinary(TEMPORAL_CLI, { ...rest, explicitPath: cliPath ?? '' });
}
