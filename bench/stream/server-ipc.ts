// The bench servers' side of the IPC with bench/stream.ts: ready with the port, then source
// commands, stats and stop.
import type { Source } from './source.ts';

export type ServerCommand =
  | { cmd: 'saturate'; rowsPerTick: number }
  | { cmd: 'rate'; rowsPerSecond: number }
  | { cmd: 'stop-source' }
  | { cmd: 'stats' }
  | { cmd: 'gc' }
  | { cmd: 'stop' };

export interface ServerStats {
  type: 'stats';
  published: number;
  slowCloses: number;
  connections: number;
}

export function serveCommands(
  source: Source,
  port: number,
  stats: () => Promise<{ slowCloses: number; connections: number }>,
  stop: () => Promise<void>,
): void {
  process.on('message', (m: ServerCommand) => {
    switch (m.cmd) {
      case 'saturate':
        return source.saturate(m.rowsPerTick);
      case 'rate':
        return source.rate(m.rowsPerSecond);
      case 'stop-source':
        return source.stop();
      case 'stats':
        return void stats().then((s) => process.send!({ type: 'stats', published: source.published, ...s } satisfies ServerStats));
      case 'gc':
        // Started with --expose-gc: settle the heap before an RSS reading.
        (globalThis as { gc?: () => void }).gc?.();
        return void setTimeout(() => process.send!({ type: 'gc-done' }), 200);
      case 'stop':
        source.stop();
        return void stop().then(() => process.exit(0));
    }
  });
  process.send!({ type: 'ready', port });
}
