// The delivery sender's safety (issue 15): with the address rule on, a loopback receiver is
// never connected to, whichever way its address is written, including a name that resolves to
// 127.0.0.1 (checked on the address the socket would use). Redirects are not followed, at most
// 64 KB of an answer is read, and a hung endpoint is cut off at the timeout. Loopback only.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RESPONSE_LIMIT_BYTES, send } from '../../src/webhooks/http-send.ts';
import { startReceiver, type Receiver } from '../support/webhook-receiver.ts';

let rx: Receiver;
let other: Receiver;
let port: string;

beforeAll(async () => {
  rx = await startReceiver();
  other = await startReceiver();
  port = new URL(rx.url).port;
});

afterAll(async () => {
  await rx?.close();
  await other?.close();
});

const strict = { allowPrivateNetworks: false, timeoutMs: 2_000 };
// Long enough for the loopback receivers' answers (a megabyte among them) on a loaded machine;
// the hung endpoint's test sets a short one of its own.
const open = { allowPrivateNetworks: true, timeoutMs: 5_000 };

describe('with the address rule on', () => {
  it('refuses every loopback form without connecting, a name resolving to 127.0.0.1 included', async () => {
    for (const host of ['127.0.0.1', '127.1', '2130706433', '0x7f000001', '0177.0.0.1', '[::1]', '[::ffff:127.0.0.1]', 'localhost']) {
      const out = await send(`https://${host}:${port}/hook`, {}, '{}', strict);
      expect(out.status, host).toBeNull();
      expect(out.error, host).toMatch(/^refused: /);
    }
    expect(await send(`http://hooks.example.com:${port}/`, {}, '{}', strict)).toMatchObject({ status: null, error: 'refused: not https' });
    expect(rx.connections).toBe(0);
    expect(rx.received).toHaveLength(0);
  });
});

describe('with private networks allowed (loopback receivers)', () => {
  it('does not follow a redirect, toward loopback or anywhere', async () => {
    rx.script = [{ status: 302, headers: { location: other.url } }, { status: 307, headers: { location: 'http://169.254.169.254/latest' } }];
    expect((await send(rx.url, {}, '{}', open)).status).toBe(302);
    expect((await send(rx.url, {}, '{}', open)).status).toBe(307);
    expect(other.received).toHaveLength(0);
  });

  it('reads at most 64 KB of an answer', async () => {
    rx.script = [{ status: 200, body: 'x'.repeat(1_000_000) }];
    const out = await send(rx.url, {}, '{}', open);
    expect(out.status).toBe(200);
    expect(out.body.length).toBeLessThanOrEqual(RESPONSE_LIMIT_BYTES);
  });

  it('gives up on a hung endpoint at the timeout', async () => {
    rx.script = ['hang'];
    const out = await send(rx.url, {}, '{}', { ...open, timeoutMs: 1_000 });
    expect(out.status).toBeNull();
    expect(out.error).toMatch(/timed out/);
    expect(out.latencyMs).toBeGreaterThanOrEqual(950);
    // At the timeout, with room for a loaded machine.
    expect(out.latencyMs).toBeLessThan(5_000);
  });

  it('reports a refused connection without the URL in the error', async () => {
    const out = await send('http://127.0.0.1:9/secret-token-path', {}, '{}', open);
    expect(out.status).toBeNull();
    expect(out.error).toMatch(/connection failed/);
    expect(out.error).not.toContain('secret-token-path');
  });
});
