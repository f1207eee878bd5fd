// Finds the Temporal server as production runs it (go.temporal.io/server, the version
// docker-compose's image has) and its SQL schema tool, without touching the internet: each is a
// one-time `go install` through the Go module proxy into the per-machine cache, as the CLI is
// (src/runtime/go-binary.ts), and the schema files the tool applies are copied from the module
// next to them. temporal/production-server.ts runs them; `npm run temporal:install` builds them.
import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { type GoTool, type ResolveGoBinaryOptions, cachedBinaryPath, findGo, resolveGoBinary } from '../src/runtime/go-binary.ts';

/** docker-compose's `temporalio/server` tag, without the v (test/deploy checks they agree). */
export const TEMPORAL_SERVER_VERSION = 'v1.29.1';
export const TEMPORAL_SERVER_MODULE = 'go.temporal.io/server';

const shared = {
  version: TEMPORAL_SERVER_VERSION,
  pathEnv: '',
  cacheEnv: 'TEMPORAL_CLI_CACHE',
  buildTime: 'a few minutes',
  fallback: 'the rehearsal and the production-server test need it',
} as const;

export const TEMPORAL_SERVER: GoTool = {
  ...shared,
  label: 'the Temporal server',
  module: `${TEMPORAL_SERVER_MODULE}/cmd/server`,
  binaryName: 'server',
  cacheDirName: 'tm-temporal-server',
  pathEnv: 'TEMPORAL_SERVER_PATH',
};

export const TEMPORAL_SQL_TOOL: GoTool = {
  ...shared,
  label: "the Temporal server's SQL schema tool",
  module: `${TEMPORAL_SERVER_MODULE}/cmd/tools/sql`,
  binaryName: 'sql',
  cacheDirName: 'tm-temporal-sql-tool',
  pathEnv: 'TEMPORAL_SQL_TOOL_PATH',
};

export interface TemporalServerBinaries {
  server: string;
  sqlTool: string;
  /** The module's `schema/postgresql/v12`: `temporal/versioned` and `visibility/versioned`. */
  schemaDir: string;
}

/**
 * Both binaries and the schema folder, built or copied on first use; null when there is no Go to
 * build with. Progress (a first build takes minutes) goes to `onProgress`.
 */
export async function resolveTemporalServer(opts: Omit<ResolveGoBinaryOptions, 'explicitPath'> = {}): Promise<TemporalServerBinaries | null> {
  const server = await resolveGoBinary(TEMPORAL_SERVER, opts);
  if (!server) return null;
  const sqlTool = await resolveGoBinary(TEMPORAL_SQL_TOOL, opts);
  if (!sqlTool) return null;
  const schemaDir = await resolveSchemaDir(opts);
  return schemaDir ? { server, sqlTool, schemaDir } : null;
}

const SCHEMA_SUBDIR = path.join('schema', 'postgresql', 'v12');

/** `<cache>/tm-temporal-server/<version>/schema/postgresql/v12`, copied from the module once. */
async function resolveSchemaDir(opts: Omit<ResolveGoBinaryOptions, 'explicitPath'>): Promise<string | null> {
  const env = opts.env ?? process.env;
  const target = path.join(path.dirname(cachedBinaryPath(TEMPORAL_SERVER, env)), SCHEMA_SUBDIR);
  if (await exists(path.join(target, 'temporal', 'versioned'))) return target;
  const go = opts.goBinary ?? (await findGo(env));
  if (!go) return null;
  // The build above put the module in Go's module cache: this is a lookup, not a download.
  const { stdout } = await promisify(execFile)(go, ['mod', 'download', '-json', `${TEMPORAL_SERVER_MODULE}@${TEMPORAL_SERVER_VERSION}`], { env: { ...env, GOFLAGS: '-mod=mod' } });
  const dir = (JSON.parse(stdout) as { Dir?: string }).Dir;
  if (!dir) throw new Error(`go mod download named no folder for ${TEMPORAL_SERVER_MODULE}@${TEMPORAL_SERVER_VERSION}`);
  // Copied to a temporary name and renamed: a reader never sees half a schema.
  const partial = `${target}.partial-${process.pid}`;
  await fs.rm(partial, { recursive: true, force: true });
  await fs.mkdir(path.dirname(target), { recursive: true });
  await fs.cp(path.join(dir, SCHEMA_SUBDIR), partial, { recursive: true });
  // The module cache is read-only, and so is a copy: made writable so the cache can be cleared.
  await makeWritable(partial);
  await fs.rename(partial, target).catch(async (err: NodeJS.ErrnoException) => {
    await fs.rm(partial, { recursive: true, force: true });
    // Another process copied it first.
    if (err.code !== 'ENOTEMPTY' && err.code !== 'EEXIST') throw err;
  });
  opts.onProgress?.(`copied the server's PostgreSQL schema to ${target}`);
  return target;
}

async function makeWritable(dir: string): Promise<void> {
  await fs.chmod(dir, 0o755);
  for (const entry of await fs.readdir(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    if (entry.isDirectory()) await makeWritable(p);
    else await fs.chmod(p, 0o644);
  }
}

async function exists(p: string): Promise<boolean> {
  return fs.stat(p).then(
    () => true,
    () => false,
  );
}
