// `npm run temporal:install`: provisions the Temporal CLI once per machine (see binary.ts) so the
// slow first build happens up front, with its progress visible, instead of inside `npm test` or
// `npm start`. Progress goes to stderr; the binary's path is the only line on stdout.
import { TEMPORAL_CLI_VERSION, resolveTemporalCli } from './binary.ts';

const started = Date.now();
try {
  const binary = await resolveTemporalCli({
    cliPath: process.env.TEMPORAL_CLI_PATH || undefined,
    onProgress: (msg) => console.error(`temporal: ${msg}`),
  });
  if (binary) {
    console.error(`temporal: CLI ${TEMPORAL_CLI_VERSION} ready (${Math.round((Date.now() - started) / 1000)} s)`);
    console.log(binary);
  } else {
    // Not an error: on a machine with internet the SDK downloads its own server.
    console.error("temporal: no CLI binary; tests and `npm start` will use @temporalio/testing's download");
  }
} catch (err) {
  console.error(`temporal: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
}
