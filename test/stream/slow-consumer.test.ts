// A client that stops reading must not hold the node's memory or its other clients hostage:
// once its unsent buffer passes max_buffered_bytes it is closed with 1013 and a logged reason
// (account and connection, never the key), while everyone else keeps receiving every row.
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STREAM_PATH } from '../../src/stream/protocol.ts';
import { newAccount, type TestAccount } from '../support/harness.ts';
import { append, connect, sleep, startNode, type TestNode } from './helpers.ts';

const LIMIT = 65_536;

/** Upgrades over a raw TCP socket, reads the 101 and the hello, then never reads again. */
async function stalledClient(port: number, key: string): Promise<net.Socket> {
  const socket = net.connect(port, '127.0.0.1');
  await new Promise<void>((resolve, reject) => {
    socket.once('error', reject);
    socket.once('connect', () => {
      socket.write(
        [
          `GET ${STREAM_PATH} HTTP/1.1`,
          'Host: 127.0.0.1',
          'Upgrade: websocket',
          'Connection: Upgrade',
          'Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==',
          'Sec-WebSocket-Version: 13',
          `apikey: ${key}`,
          '',
          '',
        ].join('\r\n'),
      );
    });
    let seen = '';
    const onData = (d: Buffer) => {
      seen += d.toString('latin1');
      if (seen.startsWith('HTTP/1.1 101') && seen.includes('"type":"hello"')) {
        socket.off('data', onData);
        socket.pause();
        resolve();
      }
    };
    socket.on('data', onData);
  });
  return socket;
}

describe('slow consumers', () => {
  let t: TestNode;
  let a: TestAccount;
  let b: TestAccount;

  beforeAll(async () => {
    t = await startNode({ env: { STREAM_MAX_BUFFERED_BYTES: String(LIMIT) } });
    a = await newAccount(t.db);
    b = await newAccount(t.db);
  });
  afterAll(async () => {
    await t.close();
  });

  it('closes a client that stopped reading (1013, logged), memory stays bounded, the others get everything', async () => {
    const stalled = await stalledClient(t.port, a.key);
    const readers = [await connect(t.url, { key: a.key }), await connect(t.url, { key: a.key })];
    const other = await connect(t.url, { key: b.key });
    const rssBefore = process.memoryUsage().rss;
    const filler = 'x'.repeat(2_000);
    const ids: number[] = [];
    let published = 0;
    const slowClosed = () => t.logs.lines.some((l) => String(l.msg).includes('slow consumer'));
    // Keep writing ~500 KB batches until the node gives up on the stalled client (the kernel's
    // socket buffers absorb a few MB first); never more than 24 MB.
    while (!slowClosed() && published < 24_000_000) {
      ids.push(...(await append(t.db, a.accountId, 250, 'notification', { filler })));
      published += 250 * 2_100;
      await sleep(30);
    }
    expect(slowClosed()).toBe(true);
    const bIds = await append(t.db, b.accountId, 3);
    // More rows after the close reach the readers only.
    ids.push(...(await append(t.db, a.accountId, 50, 'notification', { filler })));
    for (const r of readers) {
      await r.until((x) => x.ids().length === ids.length, 15_000, `${ids.length} rows`);
      expect(r.ids()).toEqual(ids);
    }
    await other.until((x) => x.ids().length === 3);
    expect(other.ids()).toEqual(bIds);

    const line = t.logs.lines.find((l) => String(l.msg).includes('slow consumer'))!;
    expect(line).toMatchObject({ level: 40, account_id: a.accountId, limit: LIMIT });
    expect(typeof line.connection_id).toBe('string');
    expect(line.buffered_bytes as number).toBeGreaterThan(LIMIT);
    // uWS never held more than its hard limit (2x) plus one page for the stalled socket.
    expect(line.buffered_bytes as number).toBeLessThan(2 * LIMIT + 1_000 * 2_200);
    const closedLine = t.logs.lines.find((l) => l.connection_id === line.connection_id && l.msg === 'stream: disconnected');
    expect(closedLine).toMatchObject({ code: 1013, reason: 'slow_consumer' });
    expect(t.logs.raw.some((l) => l.includes(a.key) || l.includes(b.key))).toBe(false);
    expect(await t.registry.metrics()).toMatch(/stream_slow_consumer_closes_total 1/);
    // Bounded: far below what was published while the client was stalled.
    expect(process.memoryUsage().rss - rssBefore).toBeLessThan(Math.max(64_000_000, published / 2));

    // The stalled socket is dropped by the node (close frame, then the close timeout).
    const ended = new Promise<void>((resolve) => stalled.once('close', () => resolve()));
    stalled.resume();
    await ended;
    for (const r of [...readers, other]) r.close();
  });
});
