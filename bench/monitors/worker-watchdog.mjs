// Preloaded into the worker child (`node --import tsx --import bench/monitors/worker-watchdog.mjs
// temporal/worker-main.ts`): the worker exits when the bench's end of its stdin closes, so a
// bench that died without cleaning up (SIGKILL, OOM) leaves no worker polling a dropped
// database. It changes nothing else: worker-main never reads stdin. Plain JavaScript, and only
// on the main thread: Node passes --import on to worker threads too (the Temporal SDK's
// workflow thread), where stdin is not the bench's pipe.
import { isMainThread } from 'node:worker_threads';

if (isMainThread) {
  const die = () => process.kill(process.pid, 'SIGKILL');
  process.stdin.on('end', die);
  process.stdin.on('error', die);
  process.stdin.resume();
}
