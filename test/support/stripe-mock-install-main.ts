// `npm run stripe-mock:install`: provisions stripe-mock once per machine (see stripe-mock-server.ts)
// so CI shows its build up front rather than inside npm test's global setup. Progress goes to
// stderr; the binary's path is the only line on stdout.
import { STRIPE_MOCK, resolveStripeMock } from './stripe-mock-server.ts';

const say = (msg: string) => process.stderr.write(`stripe-mock: ${msg}\n`);
const started = Date.now();
try {
  const binary = await resolveStripeMock({ onProgress: say });
  if (!binary) {
    say('no binary: install Go (or set STRIPE_MOCK_PATH) for the Stripe tests');
    process.exit(1);
  }
  say(`${STRIPE_MOCK.version} ready (${Math.round((Date.now() - started) / 1000)} s)`);
  process.stdout.write(`${binary}\n`);
} catch (err) {
  say(err instanceof Error ? err.message : String(err));
  process.exit(1);
}
