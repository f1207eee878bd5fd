// `npm run toxiproxy:install`: provisions Toxiproxy once per machine (rehearsal/toxiproxy.ts) so CI
// shows its build up front rather than inside the tests that cut a server off. Progress goes to
// stderr; the binary's path is the only line on stdout.
import { TOXIPROXY, resolveToxiproxy } from '../../rehearsal/toxiproxy.ts';

const say = (msg: string) => process.stderr.write(`toxiproxy: ${msg}\n`);
const started = Date.now();
try {
  const binary = await resolveToxiproxy(say);
  say(`${TOXIPROXY.version} ready (${Math.round((Date.now() - started) / 1000)} s)`);
  process.stdout.write(`${binary}\n`);
} catch (err) {
  say(err instanceof Error ? err.message : String(err));
  process.exit(1);
}
