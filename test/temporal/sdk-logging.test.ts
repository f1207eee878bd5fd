// The SDK's internal warnings through our logger: a run of the same kind (the core's retries of
// every poller while the server is away) is one warning, the rest debug, until it has been quiet.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { PinoSdkLogger, type Log } from '../../temporal/sdk-logging.ts';

function recorder() {
  const lines: { level: string; msg: string }[] = [];
  const at = (level: string) => (_fields: object, msg: string) => void lines.push({ level, msg });
  return { lines, log: { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') } as unknown as Log };
}

describe('PinoSdkLogger', () => {
  afterEach(() => vi.useRealTimers());

  it('logs a run of repeated core warnings once, then again after 30 s of quiet; other kinds and errors always', () => {
    vi.useFakeTimers();
    const r = recorder();
    const sdk = new PinoSdkLogger(r.log);
    const core = { sdkComponent: 'core', target: 'temporalio_client::retry' };
    for (let i = 1; i <= 50; i++) {
      sdk.warn(`gRPC call poll_workflow_task_queue retried ${i} times`, core);
      sdk.warn(`gRPC call poll_activity_task_queue retried ${i} times`, core);
      vi.advanceTimersByTime(200);
    }
    sdk.error('worker failed', core);
    expect(r.lines.filter((l) => l.level === 'warn').map((l) => l.msg)).toEqual([
      'gRPC call poll_workflow_task_queue retried 1 times',
      'gRPC call poll_activity_task_queue retried 1 times',
    ]);
    expect(r.lines.filter((l) => l.level === 'debug')).toHaveLength(98);
    expect(r.lines.filter((l) => l.level === 'error')).toHaveLength(1);
    vi.advanceTimersByTime(31_000);
    sdk.warn('gRPC call poll_workflow_task_queue retried 1 times', core);
    expect(r.lines.at(-1)).toEqual({ level: 'warn', msg: 'gRPC call poll_workflow_task_queue retried 1 times' });
  });

  it('never folds warnings from workflow or activity code', () => {
    const r = recorder();
    const sdk = new PinoSdkLogger(r.log);
    for (let i = 0; i < 3; i++) sdk.warn('poll failed', { sdkComponent: 'activity' });
    expect(r.lines.map((l) => l.level)).toEqual(['warn', 'warn', 'warn']);
  });
});
