// The WebSocket handshake itself, on raw TCP so no client library tidies it up: an upgrade needs
// `Upgrade: websocket` and `Connection: Upgrade` (RFC 6455, 4.2.1), else 426. On this uWS build
// a request whose Connection value is 5 characters long (`close`) marks its response to close
// once complete, and completing an upgrade after it (outside a cork: upgrade-anchor.ts) crashed
// the node, so it must be refused before the admission. And a storm of upgrades all get their
// hello and stay open (what the anchor is there for: src/stream/upgrade-anchor.ts).
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STREAM_PATH } from '../../src/stream/protocol.ts';
import { newAccount, type TestAccount } from '../support/harness.ts';
import { append, connect, rawUpgrade, sleep, startNode, type RawAnswer, type TestNode } from './helpers.ts';

function request(key: string, headers: string[]): string {
  return [`GET ${STREAM_PATH} HTTP/1.1`, 'Host: 127.0.0.1', 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==', 'Sec-WebSocket-Version: 13', `apikey: ${key}`, ...headers, '', ''].join('\r\n');
}

function errorCode(a: RawAnswer): string {
  return (JSON.parse(a.text.slice(a.text.indexOf('\r\n\r\n') + 4)) as { error: { code: string } }).error.code;
}

/** Whether a comma-separated header value holds `token`, in any case: the test's own reading of RFC 9110's lists. */
const listHas = (value: string | undefined, token: string) => value !== undefined && value.split(',').some((t) => t.trim().toLowerCase() === token);

describe('stream handshake', () => {
  let t: TestNode;
  let a: TestAccount;

  beforeAll(async () => {
    t = await startNode();
    a = await newAccount(t.db);
  });
  afterAll(async () => {
    await t.close();
  });

  async function stillServing(): Promise<void> {
    const c = await connect(t.url, { key: a.key });
    const [id] = await append(t.db, a.accountId, 1);
    await c.until((x) => x.ids().includes(id!));
    c.close();
  }

  it('refuses `Connection: close` with 426 before the admission, and the node keeps serving', async () => {
    // On the code before, this request (a valid key) crashed the whole process.
    const answer = await rawUpgrade(t.port, request(a.key, ['Upgrade: websocket', 'Connection: close']));
    expect(answer.status).toBe(426);
    expect(errorCode(answer)).toBe('upgrade_required');
    expect(answer.text).toMatch(/\r\nupgrade: websocket\r\n/i);
    await stillServing();
  });

  it('takes the headers in any case and among other tokens', async () => {
    for (const headers of [
      ['Upgrade: websocket', 'Connection: Upgrade'],
      ['Upgrade: WebSocket', 'Connection: keep-alive, Upgrade'],
      ['upgrade: websocket', 'connection: upgrade'],
      ['Upgrade: h2c, websocket', 'Connection: Upgrade, close'],
    ]) {
      const answer = await rawUpgrade(t.port, request(a.key, headers));
      expect(answer.status, headers.join(' / ')).toBe(101);
      expect(answer.hello).toBe(true);
    }
  });

  it('answers any Upgrade and Connection values with 101 and a hello, or 426, and keeps serving', async () => {
    const token = fc.constantFrom('Upgrade', 'upgrade', 'UPGRADE', 'websocket', 'WebSocket', 'close', 'Close', 'keep-alive', 'h2c', 'xxxxx', 'upgrade2', ' ', '');
    const list = fc.option(fc.array(token, { minLength: 1, maxLength: 3 }).map((l) => l.join(', ')), { nil: undefined });
    await fc.assert(
      // HTTP/1.1 only: uWS never hands an HTTP/1.0 request to a handler (it waits for its idle timeout).
      fc.asyncProperty(list, list, async (upgrade, connection) => {
        const headers = [...(upgrade !== undefined ? [`Upgrade: ${upgrade}`] : []), ...(connection !== undefined ? [`Connection: ${connection}`] : [])];
        const answer = await rawUpgrade(t.port, request(a.key, headers));
        const valid = listHas(upgrade, 'websocket') && listHas(connection, 'upgrade');
        if (!valid) {
          expect(answer.status).toBe(426);
          expect(errorCode(answer)).toBe('upgrade_required');
        } else {
          expect(answer.status).toBe(101);
          expect(answer.hello).toBe(true);
        }
      }),
      { numRuns: 120 },
    );
    await stillServing();
  });

  it('a storm of 600 upgrades at once: every one gets its hello and stays open', async () => {
    const accounts = await Promise.all(Array.from({ length: 4 }, () => newAccount(t.db)));
    const answers = await Promise.all(
      Array.from({ length: 600 }, (_, i) => rawUpgrade(t.port, request(accounts[i % 4]!.key, ['Upgrade: websocket', 'Connection: Upgrade']), { holdMs: 500 })),
    );
    expect(answers.filter((x) => x.status === 101)).toHaveLength(600);
    expect(answers.filter((x) => x.hello)).toHaveLength(600);
    expect(answers.filter((x) => x.closedEarly)).toHaveLength(0);
    await sleep(10);
  });
});
