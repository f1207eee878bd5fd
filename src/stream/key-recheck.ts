// Checks the keys of open connections again, every interval: a key revoked, expired or no longer
// granted the stream while connected loses its connections (1008 key_rejected), as an HTTP
// request with it stops working within KEY_CACHE_TTL_MS; a key whose account is no longer served
// loses them too (1008 not_served). Each distinct key is verified once per
// round, through the same cached verifier as upgrades. When the key store cannot be reached,
// connections stay: they were authenticated, and new ones are refused (fail closed) meanwhile.
import type { WebSocket } from 'uWebSockets.js';
import type { Logger } from '../logger.ts';
import type { AdmissionDeps } from './admission.ts';
import type { Connection } from './connection.ts';
import type { StreamHub } from './hub.ts';

export function startKeyRecheck(hub: StreamHub, keys: AdmissionDeps['keys'], log: Logger, everyMs: number): () => void {
  let running = false;
  const round = async () => {
    if (running) return;
    running = true;
    try {
      const byKey = new Map<string, WebSocket<Connection>[]>();
      for (const ws of hub.open) {
        const c = ws.getUserData();
        const list = byKey.get(c.key);
        if (list) list.push(ws);
        else byKey.set(c.key, [ws]);
      }
      for (const [key, sockets] of byKey) {
        let reason: 'key_rejected' | 'not_served' | null;
        try {
          const principal = await keys.verify(key);
          reason = principal === null || !principal.apis.includes('stream') ? 'key_rejected' : principal.served ? null : 'not_served';
        } catch {
          continue;
        }
        if (reason === null) continue;
        for (const ws of sockets) {
          const c = ws.getUserData();
          if (c.closed) continue;
          log.info({ connection_id: c.id, account_id: c.accountId, key_id: c.keyId, reason }, 'stream: closing a connection its key may no longer hold (1008)');
          hub.close(ws, reason);
        }
      }
    } catch (err) {
      log.warn({ err }, 'stream: key re-check failed; will retry');
    } finally {
      running = false;
    }
  };
  const timer = setInterval(() => void round(), everyMs);
  timer.unref();
  return () => clearInterval(timer);
}
