// The platform simulator in its own process for the monitors bench, so the scrapes it serves do
// not count as the worker's CPU. Empty (the bench puts every event), on a free port; prints one
// JSON line {url, baseUrls} once listening, and exits on SIGINT/SIGTERM or when the bench's end
// of stdin closes (the bench died without cleaning up).
import { startSimulator } from '../../src/simulator/server.ts';

const sim = await startSimulator({ empty: true, port: 0 });
process.stdout.write(`${JSON.stringify({ url: sim.url, baseUrls: sim.baseUrls })}\n`);
let stopping = false;
const stop = () => {
  if (stopping) return;
  stopping = true;
  void sim.close().finally(() => process.exit(0));
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
process.stdin.on('end', stop);
process.stdin.on('error', stop);
process.stdin.resume();
