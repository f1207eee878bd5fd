// Logs on a terminal are readable, anywhere else JSON lines (issue 14), with secrets redacted in
// both. A small entry that logs as the service's entry points do (test/fixtures/log-lines.ts)
// runs on a real pseudo-terminal, made by util-linux `script`, and through a pipe.
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { promisify, stripVTControlCharacters } from 'node:util';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from './support/harness.ts';

const run = promisify(execFile);
const ENTRY = `${JSON.stringify(process.execPath)} --import tsx test/fixtures/log-lines.ts`;
// Colours and the terminal's carriage returns are the terminal's business, not the text's.
const plain = (text: string) => stripVTControlCharacters(text).replace(/\r/g, '');

describe('log output', () => {
  it('is readable on a terminal and JSON lines through a pipe, the secret redacted in both', async () => {
    const secret = `tmk_${randomUUID().replace(/-/g, '')}`;
    const env = { ...process.env, LOG_LINES_SECRET: secret };

    // `script -qec CMD /dev/null` runs CMD with its stdout on a fresh pseudo-terminal.
    const tty = plain((await run('script', ['-qec', ENTRY, '/dev/null'], { cwd: PROJECT_ROOT, env })).stdout);
    expect(tty).toMatch(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: gateway listening$/m);
    expect(tty).toMatch(/^ {4}port: 8080$/m);
    expect(tty).toMatch(/^\[[\d:.]+\] WARN: request with credentials$/m);
    expect(tty).toMatch(/^\[[\d:.]+\] ERROR: something failed$/m);
    expect(tty).toContain('Error: boom');
    expect(tty).not.toMatch(/^\{"level"/m);
    expect(tty).toContain('"apikey": "[redacted]"');
    expect(tty).not.toContain(secret);

    const piped = (await run(process.execPath, ['--import', 'tsx', 'test/fixtures/log-lines.ts'], { cwd: PROJECT_ROOT, env })).stdout;
    const lines = piped.trim().split('\n').map((l) => JSON.parse(l));
    expect(lines.map((l) => [l.level, l.msg])).toEqual([
      [30, 'gateway listening'],
      [40, 'request with credentials'],
      [50, 'something failed'],
    ]);
    expect(lines[1]).toMatchObject({ apikey: '[redacted]', req: { headers: { apikey: '[redacted]', authorization: '[redacted]' } } });
    expect(piped).not.toContain(secret);
  });
});
