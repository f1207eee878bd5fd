// The end-of-run summary of the test Temporal server's log (test/support/temporal-server-log.ts):
// counts by level, grouped by message and cause, most frequent first; nothing to say is said too.
import { describe, expect, it } from 'vitest';
import { summariseServerLog } from '../support/temporal-server-log.ts';

const line = (level: number, msg: string, error?: string) => JSON.stringify({ level, msg, source: 'temporal-server', server: error ? { error } : {} });

describe('summariseServerLog', () => {
  it('counts warnings and errors by message and cause, most frequent first, and skips info', () => {
    const log = [
      line(50, 'Persistent store operation failure', 'context canceled'),
      line(30, 'started'),
      line(50, 'GetNamespace operation failed', 'interrupted (9)'),
      line(50, 'Persistent store operation failure', 'context canceled'),
      line(40, 'Fail to process task', 'context canceled'),
      'panic: not JSON',
      '',
    ].join('\n');
    expect(summariseServerLog(log)).toBe(
      'temporal: the test server logged 3 errors, 2 warnings:\n' +
        '  2 x error Persistent store operation failure: context canceled\n' +
        '  1 x error GetNamespace operation failed: interrupted (9)\n' +
        '  1 x warning Fail to process task: context canceled\n' +
        '  1 x warning panic: not JSON\n',
    );
  });

  it('says so when the server logged nothing worth reading', () => {
    expect(summariseServerLog(`${line(30, 'started')}\n`)).toBe('temporal: the test server logged no warning or error\n');
  });
});
