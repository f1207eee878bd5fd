// The one way the service reaches Temporal as a client (starting, signalling and querying
// workflows), and how it lives through a Temporal outage:
// - the connection is checked against the namespace, so a wrong TEMPORAL_NAMESPACE (or a server
//   that answers but is not Temporal) fails at start-up with a message that names it;
// - an unreachable server either fails the start within connectTimeoutMs (tests, benches, the
//   embedded dev server) or, given `waitFor`, is waited for: one warning with its cause, one line
//   when it answers, nothing per retry. A gateway starts that way and serves every route that does
//   not need Temporal meanwhile (docs/operations.md, "What happens when a part fails");
// - the channel tries a lost server again every few seconds, not grpc-js's up to 120 s;
// - callers that hold something while they call (a relay holds its cursor's transaction) bound
//   each call with callTemporal's deadline, since the SDK retries an unreachable frontend for ~19 s.
import { Client, Connection, defaultGrpcRetryOptions, isGrpcServiceError, makeGrpcRetryInterceptor } from '@temporalio/client';
import type { Logger } from '../src/logger.ts';
import { temporalDataConverter } from './payload-codec.ts';

/**
 * grpc-js backs a lost channel's reconnects off up to 120 s: after a 30 s outage the first call
 * that got through came 22.5 s after the server was back, and longer outages wait longer. Tried
 * every 3 s at most, work refused during an outage is applied within seconds of its return.
 */
const CHANNEL_ARGS = {
  'grpc.initial_reconnect_backoff_ms': 500,
  'grpc.max_reconnect_backoff_ms': 3_000,
};

type Interceptor = ReturnType<typeof makeGrpcRetryInterceptor>;
type NextCall = Parameters<Interceptor>[1];
type InterceptingCall = ReturnType<NextCall>;
/** gRPC's CANCELLED: not among the codes the SDK retries, so the call ends with it. */
const CANCELLED = 1;

/**
 * The SDK's retry interceptor, unchanged, except that a retry whose timer fires after the
 * connection was closed ends as CANCELLED. The SDK starts that retry from its timer without
 * looking at the channel, and grpc-js throws "Channel has been shut down" there, uncaught: a
 * process that closed its connection while a call to an unreachable Temporal waited for its
 * retry (a worker or gateway stopping during an outage, a test tearing down) died of it.
 */
function retryInterceptor(): Interceptor {
  const retry = makeGrpcRetryInterceptor(defaultGrpcRetryOptions());
  return (options, nextCall) =>
    retry(options, (callOptions) => {
      try {
        return nextCall(callOptions);
      } catch (err) {
        if (!(err instanceof Error && /shut down/i.test(err.message))) throw err;
        return endedCall(err.message);
      }
    });
}

/** A call that never reaches a channel: it ends at once, CANCELLED, with `details`. */
function endedCall(details: string): InterceptingCall {
  const call = {
    start(metadata: unknown, listener?: { onReceiveStatus?: (status: { code: number; details: string; metadata: unknown }) => void }) {
      queueMicrotask(() => listener?.onReceiveStatus?.({ code: CANCELLED, details, metadata }));
    },
    cancelWithStatus() {},
    getPeer: () => '',
    sendMessageWithContext() {},
    sendMessage() {},
    startRead() {},
    halfClose() {},
    getAuthContext: () => null,
  };
  return call as unknown as InterceptingCall;
}

/** How long a relay's (or the sweep's) call may take before its batch is put back for a retry. */
export const TEMPORAL_CALL_DEADLINE_MS = 5_000;
/** gRPC status codes with which a server that answered refuses the namespace (@grpc/grpc-js is not our dependency). */
const REFUSALS = new Set([3 /* INVALID_ARGUMENT */, 5 /* NOT_FOUND */, 7 /* PERMISSION_DENIED */]);
/** How often an unreachable server is asked again while waited for. */
const WAIT_RETRY_MS = 2_000;

export interface TemporalClient {
  connection: Connection;
  client: Client;
  close(): Promise<void>;
}

export interface ConnectOptions {
  address: string;
  namespace: string;
  /** Without `waitFor`: how long the server may take to answer before the start fails. */
  connectTimeoutMs?: number;
  /** Wait for an unreachable server instead of failing (logged once, not per retry). */
  waitFor?: { log: Logger; signal?: AbortSignal };
}

/** A Temporal call bounded by TEMPORAL_CALL_DEADLINE_MS (or `ms`): a DEADLINE_EXCEEDED error past it. */
export function callTemporal<T>(client: Client, fn: () => Promise<T>, ms = TEMPORAL_CALL_DEADLINE_MS): Promise<T> {
  return client.withDeadline(Date.now() + ms, fn);
}

export async function connectTemporal(opts: ConnectOptions): Promise<TemporalClient> {
  const timeoutMs = opts.connectTimeoutMs ?? 10_000;
  // Lazy: nothing is dialled until the first call, and calls made before the server answers fail
  // (bounded by their deadlines) instead of throwing here.
  const connection = Connection.lazy({ address: opts.address, connectTimeout: timeoutMs, channelArgs: CHANNEL_ARGS, interceptors: [retryInterceptor()] });
  const close = () => connection.close();
  try {
    if (opts.waitFor) await waitUntilReachable(connection, opts, opts.waitFor);
    else {
      const problem = await checkNamespace(connection, opts.namespace, Date.now() + timeoutMs);
      if (problem) throw new Error(`cannot reach Temporal at ${opts.address} (TEMPORAL_ADDRESS) within ${timeoutMs} ms: ${problem}`);
    }
  } catch (err) {
    await close();
    throw err;
  }
  const client = new Client({ connection, namespace: opts.namespace, dataConverter: temporalDataConverter });
  return { connection, client, close };
}

/**
 * A client for a server that may not answer yet: returned at once, with `reachable` settling when
 * the server first answers for the namespace (rejecting only for a wrong namespace, or when
 * `signal` aborts). What the client is asked meanwhile fails within its own deadline.
 */
export function openTemporal(opts: ConnectOptions & { waitFor: { log: Logger; signal?: AbortSignal } }): TemporalClient & { reachable: Promise<void> } {
  const connection = Connection.lazy({ address: opts.address, connectTimeout: opts.connectTimeoutMs ?? 10_000, channelArgs: CHANNEL_ARGS, interceptors: [retryInterceptor()] });
  const client = new Client({ connection, namespace: opts.namespace, dataConverter: temporalDataConverter });
  const reachable = waitUntilReachable(connection, opts, opts.waitFor);
  reachable.catch(() => {});
  return { connection, client, close: () => connection.close(), reachable };
}

/** Null when the server answers for the namespace; what went wrong otherwise. Throws for a wrong namespace. */
async function checkNamespace(connection: Connection, namespace: string, deadline: number): Promise<string | null> {
  try {
    await connection.withDeadline(deadline, () => connection.workflowService.describeNamespace({ namespace }));
    return null;
  } catch (err) {
    const cause = isGrpcServiceError(err) ? err : (err as { cause?: unknown }).cause;
    // The server answered, and said no: waiting will not change that.
    if (isGrpcServiceError(cause) && REFUSALS.has(cause.code)) {
      throw new Error(`Temporal at ${connection.options.address} has no usable namespace "${namespace}" (TEMPORAL_NAMESPACE): ${cause.details || cause.message}`);
    }
    return err instanceof Error ? err.message : String(err);
  }
}

async function waitUntilReachable(connection: Connection, opts: ConnectOptions, wait: { log: Logger; signal?: AbortSignal }): Promise<void> {
  const since = Date.now();
  let warned = false;
  for (;;) {
    wait.signal?.throwIfAborted();
    const problem = await checkNamespace(connection, opts.namespace, Date.now() + WAIT_RETRY_MS * 2);
    if (problem === null) {
      if (warned) wait.log.info({ address: opts.address, down_ms: Date.now() - since }, 'Temporal reachable');
      return;
    }
    if (!warned) {
      warned = true;
      wait.log.warn({ address: opts.address, cause: problem }, 'Temporal unreachable; waiting for it (routes and work that need it wait or answer 503 meanwhile)');
    }
    await new Promise<void>((resolve) => {
      const t = setTimeout(resolve, WAIT_RETRY_MS);
      wait.signal?.addEventListener('abort', () => (clearTimeout(t), resolve()), { once: true });
    });
  }
}
