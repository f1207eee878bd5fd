// Makes the stream reachable on the gateway's host and port under `npm start`: the gateway's
// Node HTTP server hands every upgrade request to this function, which forwards the stream path
// to the uWS port as raw TCP (the request head written back out, then bytes piped both ways), so
// authentication, refusals and the WebSocket itself are the stream node's. The client's address
// travels in X-Forwarded-For, which the stream node trusts from the loopback only (or with
// TRUST_PROXY). Other upgrade paths are answered 404 in the gateway envelope.
import type { IncomingMessage, Server } from 'node:http';
import net from 'node:net';
import type { Duplex } from 'node:stream';
import type { Logger } from '../logger.ts';
import { STREAM_PATH } from './protocol.ts';
import { STATUS_TEXT, StreamRefusal } from './reasons.ts';

export interface UpgradeForwarder {
  /** Destroys every forwarded connection (the stream node closes its side first on shutdown). */
  close(): void;
}

function writeRaw(socket: Duplex, refusal: StreamRefusal): void {
  const body = refusal.body();
  const head = [
    `HTTP/1.1 ${refusal.status} ${STATUS_TEXT[refusal.status] ?? 'Error'}`,
    'Content-Type: application/json',
    `Content-Length: ${Buffer.byteLength(body)}`,
    'Connection: close',
  ];
  socket.end(`${head.join('\r\n')}\r\n\r\n${body}`);
}

/**
 * The address the gateway would rate-limit: the peer, or behind a trusted proxy the last
 * X-Forwarded-For entry (the one that proxy appended), as Koa computes `ctx.ip`.
 */
function gatewayClientAddress(req: IncomingMessage, trustProxy: boolean): string {
  const peer = req.socket.remoteAddress ?? '';
  const xff = req.headers['x-forwarded-for'];
  if (!trustProxy || typeof xff !== 'string' || !xff.trim()) return peer;
  return xff.split(',').pop()!.trim() || peer;
}

export function forwardStreamUpgrades(server: Server, opts: { port: number; trustProxy: boolean; log: Logger }): UpgradeForwarder {
  const open = new Set<Duplex>();
  const track = (s: Duplex) => {
    open.add(s);
    s.once('close', () => open.delete(s));
  };

  server.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on('error', () => socket.destroy());
    const path = (req.url ?? '').split('?')[0];
    if (path !== STREAM_PATH) return writeRaw(socket, StreamRefusal.of('not_found'));

    const upstream = net.connect(opts.port, '127.0.0.1');
    track(socket);
    track(upstream);
    let connected = false;
    upstream.once('connect', () => {
      connected = true;
      upstream.setNoDelay(true);
      (socket as net.Socket).setNoDelay?.(true);
      const lines = [`${req.method} ${req.url} HTTP/1.1`];
      for (let i = 0; i < req.rawHeaders.length; i += 2) {
        if (req.rawHeaders[i]!.toLowerCase() !== 'x-forwarded-for') lines.push(`${req.rawHeaders[i]}: ${req.rawHeaders[i + 1]}`);
      }
      lines.push(`X-Forwarded-For: ${gatewayClientAddress(req, opts.trustProxy)}`);
      upstream.write(`${lines.join('\r\n')}\r\n\r\n`);
      if (head.length) upstream.write(head);
      upstream.pipe(socket);
      socket.pipe(upstream);
    });
    upstream.on('error', (err) => {
      if (connected) return socket.destroy();
      opts.log.error({ err }, 'stream: forwarding an upgrade to the stream port failed');
      writeRaw(socket, StreamRefusal.of('service_unavailable', 'stream unavailable'));
    });
    upstream.on('close', () => {
      if (!connected) return;
      // pipe() has ended the client's side; give the last bytes (a close frame) time to go out.
      socket.end();
      setTimeout(() => socket.destroy(), 1_000).unref();
    });
    socket.on('close', () => upstream.destroy());
  });

  return {
    close: () => {
      for (const s of open) s.destroy();
      open.clear();
    },
  };
}
