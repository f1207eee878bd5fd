// One table of every way the stream says no or goodbye. Before the upgrade: an HTTP status in
// the gateway envelope (spec 7.1, 7.6). After it: only standard WebSocket close codes (RFC 6455
// section 7.4.1), never a 4xxx code, with a short machine-readable reason text.
import { GatewayError, type GatewayErrorCode } from '../gateway/errors.ts';

/** Answers before the upgrade: the gateway's codes plus 426 for a request that is not an upgrade. */
export type RefusalCode = GatewayErrorCode | 'upgrade_required';

export class StreamRefusal {
  readonly status: number;
  constructor(
    readonly code: RefusalCode,
    readonly message: string,
    readonly headers: Record<string, string> = {},
  ) {
    this.status = code === 'upgrade_required' ? 426 : new GatewayError(code).status;
  }

  static of(code: GatewayErrorCode, message?: string, headers: Record<string, string> = {}): StreamRefusal {
    return new StreamRefusal(code, message ?? new GatewayError(code).message, headers);
  }

  body(): string {
    return JSON.stringify({ error: { code: this.code, message: this.message } });
  }
}

/** HTTP reason phrases for the statuses the stream answers. */
export const STATUS_TEXT: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  402: 'Payment Required',
  403: 'Forbidden',
  404: 'Not Found',
  426: 'Upgrade Required',
  429: 'Too Many Requests',
  502: 'Bad Gateway',
};

/** Every status a request to the stream port can get (the property test holds the server to it). */
export const DOCUMENTED_STATUSES = [101, 400, 401, 402, 403, 404, 426, 429, 502] as const;

export interface CloseReason {
  code: number;
  reason: string;
  description: string;
}

/** Close codes the server sends after the upgrade. On any close, reconnect with last_id. */
export const CLOSE_REASONS = {
  server_shutdown: {
    code: 1001,
    reason: 'server_shutdown',
    description: 'going away: the node is stopping; reconnect (with backoff) and resume with last_id',
  },
  slow_consumer: {
    code: 1013,
    reason: 'slow_consumer',
    description: 'try again later: more than max_buffered_bytes were waiting to be sent; reconnect and resume with last_id',
  },
  replay_limit: {
    code: 1013,
    reason: 'replay_limit',
    description: 'try again later: max_replay_rows were replayed on this connection; reconnect at once with the last id received to get the rest',
  },
  key_rejected: {
    code: 1008,
    reason: 'key_rejected',
    description: 'policy violation: the key was revoked, expired or lost the stream API while connected; do not reconnect with it',
  },
  not_served: {
    code: 1008,
    reason: 'not_served',
    description:
      'policy violation: the account has no active or trialing subscription; reconnecting is refused (402 no_subscription) until it has one, then resume with last_id (nothing notified while it was not served is sent)',
  },
  node_unavailable: {
    code: 1013,
    reason: 'node_unavailable',
    description:
      'try again later: this node lost the database that counts open connections across nodes and can no longer vouch for its share; reconnect (another node answers) and resume with last_id',
  },
  log_unavailable: {
    code: 1011,
    reason: 'log_unavailable',
    description: 'internal error: the notifications log could not be read; reconnect with backoff and resume with last_id',
  },
} as const satisfies Record<string, CloseReason>;

export type CloseReasonName = keyof typeof CLOSE_REASONS;
