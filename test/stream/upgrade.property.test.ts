// Property: whatever query string, headers and last_id an upgrade request carries, the node
// answers with a documented HTTP status (an error in the gateway envelope, or 101), and keeps
// serving afterwards. Requests are written on raw TCP so no client library tidies them up.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STREAM_PATH } from '../../src/stream/protocol.ts';
import { DOCUMENTED_STATUSES } from '../../src/stream/reasons.ts';
import { newAccount, type TestAccount } from '../support/harness.ts';
import { append, connect, rawUpgrade, startNode, type TestNode } from './helpers.ts';

/** Sends one raw request and returns the status line's code and the rest of the answer. */
/** The answer to one raw request: a 101 as far as its head, an error with its body. */
const rawRequest = (port: number, head: string) => rawUpgrade(port, head, { untilHello: false });

const visible = fc.string({ unit: fc.constantFrom(...' !"#$%&\'()*+,-./0123456789:;<=>?@ABCXYZabcxyz[\\]^_`{|}~'.split('')), maxLength: 60 });
/** Characters legal in a request target, including ones that mean something in a query. */
const queryText = fc.string({ unit: fc.constantFrom(...'abcz019-._~!$&\'()*+,;=:@/?%'.split('')), maxLength: 80 });

describe('upgrade requests, property', () => {
  let t: TestNode;
  let a: TestAccount;

  beforeAll(async () => {
    t = await startNode();
    a = await newAccount(t.db);
  });
  afterAll(async () => {
    await t.close();
  });

  it('every request gets a documented status and the node keeps serving', async () => {
    const [knownId] = await append(t.db, a.accountId, 1);
    const lastId = fc.oneof(
      fc.constant(undefined),
      fc.integer({ min: 0, max: knownId! }).map(String),
      fc.bigInt({ min: -(10n ** 20n), max: 10n ** 20n }).map(String),
      visible,
    );
    const key = fc.oneof(fc.constant(a.key), fc.constant(undefined), visible, fc.constant(`${a.key} `));
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          path: fc.oneof({ weight: 4, arbitrary: fc.constant(STREAM_PATH) }, fc.constantFrom('/', '/svc/notifications', `${STREAM_PATH}/`, '/x%00y', '/svc/notifications/subscribe%2f')),
          query: fc.oneof(fc.constant(''), queryText),
          queryKey: fc.option(key, { nil: undefined }),
          queryLastId: fc.option(lastId, { nil: undefined }),
          headerKey: fc.option(key, { nil: undefined }),
          lastEventId: fc.option(visible, { nil: undefined }),
          forwardedFor: fc.option(visible, { nil: undefined }),
          protocol: fc.option(visible, { nil: undefined }),
          upgrade: fc.boolean(),
        }),
        async (r) => {
          const params = [r.query];
          if (r.queryKey !== undefined) params.push(`apikey=${encodeURIComponent(r.queryKey)}`);
          if (r.queryLastId !== undefined) params.push(`last_id=${encodeURIComponent(r.queryLastId)}`);
          const q = params.filter(Boolean).join('&');
          const lines = [`GET ${r.path}${q ? `?${q}` : ''} HTTP/1.1`, 'Host: 127.0.0.1'];
          if (r.upgrade) lines.push('Upgrade: websocket', 'Connection: Upgrade', 'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==', 'Sec-WebSocket-Version: 13');
          if (r.headerKey !== undefined) lines.push(`apikey: ${r.headerKey}`);
          if (r.lastEventId !== undefined) lines.push(`Last-Event-ID: ${r.lastEventId}`);
          if (r.forwardedFor !== undefined) lines.push(`X-Forwarded-For: ${r.forwardedFor}`);
          if (r.protocol !== undefined) lines.push(`Sec-WebSocket-Protocol: ${r.protocol}`);
          const answer = await rawRequest(t.port, `${lines.join('\r\n')}\r\n\r\n`);
          expect(DOCUMENTED_STATUSES).toContain(answer.status);
          if (answer.status !== 101) {
            const body = JSON.parse(answer.text.slice(answer.text.indexOf('\r\n\r\n') + 4)) as { error: { code: string; message: string } };
            expect(Object.keys(body)).toEqual(['error']);
            expect(typeof body.error.code).toBe('string');
            expect(typeof body.error.message).toBe('string');
          }
        },
      ),
      { numRuns: 150 },
    );
    // Still serving.
    const c = await connect(t.url, { key: a.key });
    const [id] = await append(t.db, a.accountId, 1);
    await c.until((x) => x.ids().includes(id!));
    c.close();
  });
});
