// Prints notifications and survives restarts: the last log id handled is saved on disk, and the
// next run resumes after it, so nothing is missed and nothing is handled twice.
//   TICKET_MARKET_URL=http://localhost:8080 TICKET_MARKET_KEY=tmk_... \
//     npx tsx clients/typescript/examples/resume-from-disk.ts ./stream-position.json
import { readFile, rename, writeFile } from 'node:fs/promises';
import WebSocket from 'ws';
import { NotificationStream } from '@ticket-market/client';

const file = process.argv[2] ?? './stream-position.json';
const saved = await readFile(file, 'utf8').then((t) => JSON.parse(t) as { lastId: number }, () => null);

const stream = new NotificationStream({
  baseUrl: process.env.TICKET_MARKET_URL ?? 'http://localhost:8080',
  apiKey: process.env.TICKET_MARKET_KEY ?? '',
  WebSocket,
  lastId: saved?.lastId ?? null, // null: start from what happens from now on
});

/** Written atomically (temp file + rename), so a crash never leaves half a file. */
async function save(lastId: number | null): Promise<void> {
  if (lastId === null) return;
  await writeFile(`${file}.tmp`, JSON.stringify({ lastId }));
  await rename(`${file}.tmp`, file);
}

stream.on('gap', () => console.error('rows after the saved id were pruned: reload GET /watchlist'));
// Heartbeats move the position past other accounts' rows; save it then too.
stream.on('heartbeat', () => void save(stream.lastId));
process.once('SIGINT', () => stream.close());

console.log(saved ? `resuming after ${saved.lastId}` : 'starting from now');
for await (const m of stream) {
  console.log(JSON.stringify(m)); // handle it first ...
  await save(m.id); // ... then record it as handled
}
