// `npm run temporal:install`: provisions, once per machine, the Temporal CLI (which runs
// `temporal server start-dev`; see binary.ts) and the Temporal server as production runs it with
// its SQL schema tool (server-binary.ts), so the slow first builds happen up front, with their
// progress visible, instead of inside `npm test`, `npm start` or the rehearsal. Progress goes to
// stderr; the binaries' paths are the only lines on stdout.
import { TEMPORAL_CLI_VERSION, resolveTemporalCli } from './binary.ts';
import { TEMPORAL_SERVER_VERSION, resolveTemporalServer } from './server-binary.ts';

const started = Date.now();
const elapsed = () => `${Math.round((Date.now() - started) / 1000)} s`;
try {
  const onProgress = (msg: string) => console.error(`temporal: ${msg}`);
  const binary = await resolveTemporalCli({ cliPath: process.env.TEMPORAL_CLI_PATH || undefined, onProgress });
  if (binary) {
    console.error(`temporal: CLI ${TEMPORAL_CLI_VERSION} ready (${elapsed()})`);
    console.log(binary);
  } else {
    // Not an error: on a machine with internet the SDK downloads its own server.
    console.error("temporal: no CLI binary; tests and `npm start` will use @temporalio/testing's download");
  }
  const server = await resolveTemporalServer({ onProgress });
  if (server) {
    console.error(`temporal: server ${TEMPORAL_SERVER_VERSION} and its SQL schema tool ready (${elapsed()})`);
    console.log(server.server);
    console.log(server.sqlTool);
  } else {
    // Not fatal here either: only the rehearsal and the production-server test need it, and they say so.
    console.error('temporal: no Go toolchain to build the Temporal server: the rehearsal and the production-server test cannot run');
  }
} catch (err) {
  console.error(`temporal: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
}
