// The stream node: a uWebSockets.js app serving /svc/notifications/subscribe on its own port,
// its log follower and its fan-out hub. The uWS callbacks only delegate (connection.ts holds
// the protocol). Nodes keep no state of their own beyond open sockets: any number can run.
import type { TemplatedApp, WebSocket, us_listen_socket } from 'uWebSockets.js';
import type { Config } from '../config.ts';
import { UpgradeAdmission, type AdmissionDeps } from './admission.ts';
import { buildAsyncApi } from './asyncapi.ts';
import { StreamProtocol, writeRefusal, type Connection } from './connection.ts';
import { LogFollower } from './follower.ts';
import { startKeyRecheck } from './key-recheck.ts';
import { StreamHub } from './hub.ts';
import type { StreamMetrics } from './metrics.ts';
import { ConnectionSlots, type SlotTimings } from './connection-slots.ts';
import { assertNativeUws, uws } from './native-uws.ts';
import { STREAM_PATH, type Limits } from './protocol.ts';
import { StreamRefusal } from './reasons.ts';
import { ANCHOR_PATH, UpgradeAnchor } from './upgrade-anchor.ts';
import { portInUseMessage, portOwner } from '../runtime/ports.ts';

export type StreamConfig = AdmissionDeps['config'] &
  Pick<
    Config,
    | 'HOST'
    | 'STREAM_PORT'
    | 'STREAM_HEARTBEAT_MS'
    | 'STREAM_MAX_BUFFERED_BYTES'
    | 'STREAM_MAX_REPLAY_ROWS'
    | 'STREAM_RETENTION_HOURS'
    | 'STREAM_POLL_MS'
  >;

export interface StreamDeps extends Omit<AdmissionDeps, 'config' | 'slots'> {
  config: StreamConfig;
  /** For the follower's LISTEN connection. */
  connectionString: string;
  metrics: StreamMetrics;
  /** How often the keys of open connections are verified again (default 30 s). */
  keyRecheckMs?: number;
  /** The connection count's touch, stale and fence times (tests shorten them). */
  slotTimings?: SlotTimings;
}

export interface StreamServer {
  port: number;
  follower: LogFollower;
  hub: StreamHub;
  /** Closes every connection with 1001, stops listening and following. */
  close(): Promise<void>;
}

/** Messages clients may send are ignored; uWS drops a connection that sends a larger one. */
const MAX_CLIENT_MESSAGE_BYTES = 4_096;
/** Seconds without traffic from the client (pongs count) before uWS drops it; it pings before. */
const IDLE_TIMEOUT_S = 120;
const KEY_RECHECK_MS = 30_000;

export function streamLimits(config: StreamConfig): Limits {
  return {
    max_buffered_bytes: config.STREAM_MAX_BUFFERED_BYTES,
    heartbeat_interval_ms: config.STREAM_HEARTBEAT_MS,
    max_replay_rows: config.STREAM_MAX_REPLAY_ROWS,
    retention_seconds: config.STREAM_RETENTION_HOURS * 3600,
  };
}

function listen(app: TemplatedApp, host: string, port: number): Promise<us_listen_socket> {
  return new Promise((resolve, reject) => {
    // Exclusive: uWS otherwise shares a busy port (SO_REUSEPORT) instead of failing.
    const listenTo = app.listen as unknown as (h: string, p: number, o: number, cb: (s: us_listen_socket | false) => void) => void;
    listenTo.call(app, host, port, (uws as unknown as { LIBUS_LISTEN_EXCLUSIVE_PORT: number }).LIBUS_LISTEN_EXCLUSIVE_PORT, (socket) => {
      if (socket) resolve(socket);
      // uWS gives no reason: a listener found on the port is the usual one, and is named.
      else reject(new Error(portOwner(port) ? portInUseMessage(port, 'STREAM_PORT') : `STREAM_PORT: cannot listen on ${host}:${port} (in use?)`));
    });
  });
}

export async function startStreamServer(deps: StreamDeps): Promise<StreamServer> {
  assertNativeUws();
  const { config, log, metrics, pool } = deps;
  const limits = streamLimits(config);
  const app = uws.App();
  const follower: LogFollower = new LogFollower({
    pool,
    connectionString: deps.connectionString,
    pollMs: config.STREAM_POLL_MS,
    log,
    onRows: (rows, start) => hub.publish(rows, start),
  });
  const hub = new StreamHub(
    app,
    { maxBufferedBytes: limits.max_buffered_bytes, heartbeatMs: limits.heartbeat_interval_ms, cursor: () => follower.cursor },
    metrics,
    log,
  );
  const anchor = new UpgradeAnchor(log);
  // Fenced (cut off from the count): every connection goes, to resume on a node that is counted.
  const slots = new ConnectionSlots(
    pool,
    log,
    () => {
      for (const ws of [...hub.open] as WebSocket<Connection>[]) hub.close(ws, 'node_unavailable');
    },
    deps.slotTimings,
  );
  const protocol = new StreamProtocol({ admission: new UpgradeAdmission({ ...deps, config, slots }), slots, anchor, hub, follower, pool, limits, log, metrics });
  const asyncapi = JSON.stringify(buildAsyncApi());

  app.ws<Connection>(STREAM_PATH, {
    compression: uws.DISABLED,
    maxPayloadLength: MAX_CLIENT_MESSAGE_BYTES,
    idleTimeout: IDLE_TIMEOUT_S,
    sendPingsAutomatically: true,
    // The hub closes a connection past max_buffered_bytes with 1013 before publishing to it and
    // publishes at most half that per tick, so this hard limit is never reached in practice; if
    // it were, uWS cuts the connection (closeOnBackpressureLimit) rather than drop a message.
    maxBackpressure: 2 * limits.max_buffered_bytes,
    closeOnBackpressureLimit: 1,
    upgrade: (res, req, context) => protocol.upgrade(res, req, context),
    open: (ws) => protocol.open(ws),
    drain: (ws) => protocol.drain(ws),
    close: (ws, code, message) => protocol.close(ws, code, message),
    message: () => {},
  });
  app.ws(ANCHOR_PATH, anchor.behavior((res) => writeRefusal(res, StreamRefusal.of('not_found'), '')));
  app.get('/asyncapi.json', (res) => {
    res.cork(() => res.writeHeader('Content-Type', 'application/json').end(asyncapi));
  });
  app.any('/*', (res, req) => {
    // The stream path lands here when the request is not a valid WebSocket upgrade.
    const refusal =
      req.getUrl() === STREAM_PATH
        ? new StreamRefusal('upgrade_required', 'this path only serves WebSocket upgrades (RFC 6455)')
        : StreamRefusal.of('not_found');
    metrics.refusals.inc({ status: String(refusal.status) });
    res.cork(() => writeRefusal(res, refusal, ''));
  });

  await follower.start();
  let listenSocket: us_listen_socket;
  try {
    await slots.start();
    listenSocket = await listen(app, config.HOST, config.STREAM_PORT);
  } catch (err) {
    await follower.close();
    await slots.stop().catch(() => {});
    throw err;
  }
  const port = uws.us_socket_local_port(listenSocket as never);
  try {
    await anchor.connect(port);
  } catch (err) {
    log.warn({ err }, 'stream: upgrade anchor did not connect; upgrades use the corked path');
  }
  hub.startHeartbeats();
  const stopKeyRecheck = startKeyRecheck(hub, deps.keys, log, deps.keyRecheckMs ?? KEY_RECHECK_MS);
  // Rows past STREAM_RETENTION_HOURS are pruned by the gateway's housekeeping (src/retention/notifications.ts).

  let closing: Promise<void> | null = null;
  return {
    port,
    follower,
    hub,
    close: () =>
      (closing ??= (async () => {
        stopKeyRecheck();
        hub.stopHeartbeats();
        uws.us_listen_socket_close(listenSocket);
        await follower.close();
        anchor.close();
        for (const ws of [...hub.open] as WebSocket<Connection>[]) hub.close(ws, 'server_shutdown');
        // Let the close frames go out, then drop whatever is left (peers that never answer).
        await new Promise((r) => setTimeout(r, 50));
        // Present in this build, missing from its type definitions: closes every remaining socket.
        (app as unknown as { close(): void }).close();
        await slots.stop().catch((err: unknown) => log.warn({ err }, 'stream: could not give this node\'s connection slots back; other nodes drop them once it is silent'));
      })()),
  };
}
