// bench:stream's baseline: a plain `ws` server doing the same fan-out from the same source,
// with the same accounts-to-connections layout (a Map of account to its sockets, one
// JSON.stringify per row, ws.send per socket). No authentication: it only has to fan out.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';
import { streamMessage } from '../../src/notifications/log.ts';
import { STREAM_PATH } from '../../src/stream/protocol.ts';
import { serveCommands } from './server-ipc.ts';
import { Source } from './source.ts';

const byAccount = new Map<number, Set<WebSocket>>();
let open = 0;
const server = http.createServer((_req, res) => res.writeHead(404).end());
const wss = new WebSocketServer({ server, path: STREAM_PATH, perMessageDeflate: false });
wss.on('connection', (ws, req) => {
  const account = Number(new URL(req.url ?? '/', 'http://x').searchParams.get('account'));
  let set = byAccount.get(account);
  if (!set) byAccount.set(account, (set = new Set()));
  set.add(ws);
  open++;
  ws.send(JSON.stringify({ type: 'hello', account_id: account }));
  ws.on('close', () => {
    set.delete(ws);
    open--;
  });
  ws.on('error', () => {});
});
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const accounts = (process.env.BENCH_ACCOUNTS ?? '').split(',').map(Number);
let sample: WebSocket[] = [];
setInterval(() => (sample = [...wss.clients].filter((_, i) => i % 97 === 0).slice(0, 128)), 1_000).unref();
const source = new Source(
  (rows, start) => {
    for (let i = start; i < rows.length; i++) {
      const row = rows[i]!;
      const set = byAccount.get(row.accountId);
      if (!set?.size) continue;
      const message = JSON.stringify(streamMessage(row));
      for (const ws of set) ws.send(message);
    }
    return rows.length;
  },
  () => sample.reduce((max, ws) => Math.max(max, ws.bufferedAmount), 0),
  accounts,
  Number(process.env.BENCH_PAD ?? 0),
);

serveCommands(source, (server.address() as AddressInfo).port, async () => ({ slowCloses: 0, connections: open }), async () => {
  for (const ws of wss.clients) ws.terminate();
  await new Promise((r) => server.close(r));
});
