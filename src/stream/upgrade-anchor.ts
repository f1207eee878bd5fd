// Completes asynchronous upgrades safely on this uWebSockets.js build (20.30). The documented
// way, res.cork(() => res.upgrade(...)) after an await, can close the new WebSocket right after
// `open` (uWebSockets issues #1928/#1108, fixed upstream by PR #1929 in builds that do not load
// here): cork() then reads HTTP state from memory that the upgrade reallocated in place as
// WebSocket data, and closes the socket when stray bits look like "Connection: close". Clients
// saw it as 1006 right after the 101, about one connection in a hundred under load.
//
// Upgrading outside a cork avoids that code, but uWS.js then prints a warning to stderr on every
// upgrade unless a uWS callback is on the stack. So the node keeps one internal WebSocket to
// itself, the anchor: subscribing it to a topic makes uWS call the `subscription` handler
// synchronously, and the upgrades waiting are completed inside that callback, with no
// HttpResponse.cork around them. Until the anchor is connected (start-up, or after it dropped),
// upgrades take the corked path.
import { randomBytes, timingSafeEqual } from 'node:crypto';
import net from 'node:net';
import type { HttpRequest, HttpResponse, WebSocket, WebSocketBehavior, us_socket_context_t } from 'uWebSockets.js';
import type { Logger } from '../logger.ts';

export const ANCHOR_PATH = '/__stream_upgrade_anchor';
const TRIGGER = 'upgrade-anchor';

export class UpgradeAnchor {
  private ws: WebSocket<{ anchor: true }> | null = null;
  private socket: net.Socket | null = null;
  private pending: (() => void)[] = [];
  private closing = false;
  private readonly token = randomBytes(24);
  private opened: (() => void) | null = null;

  constructor(private readonly log: Logger) {}

  /** The uWS behaviour of ANCHOR_PATH: only this process's own connection, with its token, upgrades. */
  behavior(refuse: (res: HttpResponse) => void): WebSocketBehavior<{ anchor: true }> {
    return {
      idleTimeout: 0,
      sendPingsAutomatically: false,
      upgrade: (res: HttpResponse, req: HttpRequest, context: us_socket_context_t) => {
        const given = Buffer.from(req.getHeader('x-anchor-token'), 'hex');
        if (this.ws || given.length !== this.token.length || !timingSafeEqual(given, this.token)) return refuse(res);
        // Synchronous, inside uWS's own handler: the safe path.
        res.upgrade({ anchor: true }, req.getHeader('sec-websocket-key'), '', '', context);
      },
      open: (ws) => {
        this.ws = ws;
        this.opened?.();
      },
      subscription: (ws, topic) => {
        if (ws !== this.ws || Buffer.from(topic).toString() !== TRIGGER) return;
        for (const run of this.pending.splice(0)) run();
      },
      close: () => {
        this.ws = null;
        if (!this.closing) {
          this.log.warn('stream: upgrade anchor lost; reconnecting');
          setTimeout(() => void this.connect(this.port).catch(() => {}), 100).unref();
        }
      },
    };
  }

  private port = 0;

  /** Connects the anchor to the node listening on `port` (this process). */
  connect(port: number): Promise<void> {
    this.port = port;
    return new Promise((resolve, reject) => {
      this.opened = () => {
        this.opened = null;
        resolve();
      };
      const socket = net.connect(port, '127.0.0.1');
      this.socket = socket;
      socket.on('error', (err) => reject(err));
      socket.on('data', () => {}); // the server never sends on it; keep the socket drained
      socket.once('connect', () => {
        socket.write(
          [
            `GET ${ANCHOR_PATH} HTTP/1.1`,
            'Host: 127.0.0.1',
            'Upgrade: websocket',
            'Connection: Upgrade',
            `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}`,
            'Sec-WebSocket-Version: 13',
            `X-Anchor-Token: ${this.token.toString('hex')}`,
            '',
            '',
          ].join('\r\n'),
        );
      });
    });
  }

  /** Runs `upgrade` inside a uWS callback, or through `fallback` when the anchor is not connected. */
  run(upgrade: () => void, fallback: () => void): void {
    const ws = this.ws;
    if (!ws) return fallback();
    this.pending.push(upgrade);
    ws.subscribe(TRIGGER);
    ws.unsubscribe(TRIGGER);
  }

  close(): void {
    this.closing = true;
    this.socket?.destroy();
  }
}
