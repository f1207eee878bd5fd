// Watches one event and prints every stock increase.
//   TICKET_MARKET_URL=http://localhost:8080 TICKET_MARKET_KEY=tmk_... \
//     npx tsx clients/typescript/examples/watch-stock.ts pf_03 https://pf03.example/e/summer-open-air-4411 us
import WebSocket from 'ws'; // Node 20 has no global WebSocket; browsers and Node 22+ can omit this
import { createTicketMarketClient, NotificationStream, orThrow } from '@ticket-market/client';

const [website = 'pf_03', event = 'https://pf03.example/e/summer-open-air-4411', region = 'us'] = process.argv.slice(2);
const baseUrl = process.env.TICKET_MARKET_URL ?? 'http://localhost:8080';
const apiKey = process.env.TICKET_MARKET_KEY ?? '';

const api = createTicketMarketClient({ baseUrl, apiKey });
// Watch the event for stock increases (0 credits). Errors are values; orThrow throws them.
const item = await orThrow(api.POST('/watchlist', { body: { website: website as 'pf_03', event, region, change_type: 'stock_increase' } }));
console.log(`watching item ${item.id}: ${website} ${event} (${region})`);

const stream = new NotificationStream({ baseUrl, apiKey, WebSocket });
stream.on('disconnect', (d) => console.error(`stream dropped (${d.code} ${d.reason}); resuming in ${d.delayMs} ms`));
process.once('SIGINT', () => stream.close());

for await (const m of stream) {
  if (m.type !== 'notification' || m.item_id !== item.id || m.change_type !== 'stock_increase') continue;
  const before = m.before.stock ?? 0;
  const after = m.after.stock ?? 0;
  console.log(`${m.detected_at} ${m.section ?? 'all sections'}: stock ${before} -> ${after} (+${after - before})`);
}
