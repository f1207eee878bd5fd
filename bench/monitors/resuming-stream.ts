// The benches' stream connections, one per account, as a careful customer holds them
// (docs/stream.md): authenticated with the `apikey` header, ready once the server says `live`,
// and, when the server closes one, reopened from the last id received (the protocol's resume),
// up to ten tries half a second apart. Closes and reconnects are counted for the reports. What a
// bench does with each message is its own (bench:monitors' StreamClients, bench:alerts'
// AlertStream): every message but `live` goes to `onMessage` with its arrival time.
import WebSocket from 'ws';
import type { Account } from './load.ts';
import { sleep } from './support.ts';

export type StreamMessageListener = (raw: Record<string, unknown>, at: number) => void;

export class ResumingStreams {
  reconnects = 0;
  readonly closes: string[] = [];
  private readonly sockets = new Set<WebSocket>();
  private closing = false;

  constructor(
    private readonly url: string,
    private readonly onMessage: StreamMessageListener,
  ) {}

  /** Opens one connection per account; resolves once every one is live. */
  async openAll(accounts: readonly Account[]): Promise<void> {
    await Promise.all(accounts.map((a) => this.open(a, null)));
  }

  private open(account: Account, lastId: number | null): Promise<void> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(lastId === null ? this.url : `${this.url}?last_id=${lastId}`, { headers: { apikey: account.key } });
      this.sockets.add(ws);
      let last = lastId;
      let live = false;
      ws.once('unexpected-response', (_req, res) => reject(new Error(`stream refused the connection: ${res.statusCode}`)));
      ws.once('error', (err) => {
        if (!live) reject(err);
      });
      ws.on('message', (data) => {
        const at = Date.now();
        const raw = JSON.parse(data.toString()) as Record<string, unknown>;
        if (typeof raw.id === 'number') last = raw.id;
        if (raw.type === 'live') {
          live = true;
          resolve();
          return;
        }
        this.onMessage(raw, at);
      });
      ws.on('close', (code, reason) => {
        this.sockets.delete(ws);
        if (this.closing) return;
        this.closes.push(`${code} ${reason.toString()}`);
        if (!live) return;
        this.reconnects++;
        void (async () => {
          for (let attempt = 0; attempt < 10 && !this.closing; attempt++) {
            try {
              await this.open(account, last);
              return;
            } catch {
              await sleep(500);
            }
          }
        })();
      });
    });
  }

  close(): void {
    this.closing = true;
    for (const ws of this.sockets) ws.terminate();
    this.sockets.clear();
  }
}
