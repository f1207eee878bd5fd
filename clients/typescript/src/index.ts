// @ticket-market/client: the typed HTTP client, its errors and retry rules, and the stream client.
export { createTicketMarketClient, orThrow, type CallOptions, type ClientOptions, type Method, type Result, type TicketMarketClient } from './http.ts';
export {
  ApiError,
  REQUEST_ID_HEADER,
  type AccountErrorCode,
  type ApiErrorKind,
  type GatewayErrorCode,
  type LiveAvailabilityErrorCode,
  type MarketDataErrorCode,
  type WatchlistErrorCode,
} from './errors.ts';
export { DEFAULT_RETRY_POLICY, backoffDelay, retryDelay, type BackoffOptions, type RetryInfo, type RetryOptions, type RetryPolicy } from './retry.ts';
export {
  NotificationStream,
  STREAM_PATH,
  StreamClosedError,
  type Disconnect,
  type Heartbeat,
  type Hello,
  type Live,
  type Notification,
  type ServerMessage,
  type StreamEvents,
  type StreamOptions,
  type StreamRow,
  type StreamSchemas,
  type TargetRetired,
  type WatchlistChange,
  type WebSocketConstructor,
  type WebSocketLike,
} from './stream.ts';
export type { components, operations, paths } from './generated/openapi.ts';

import type { components } from './generated/openapi.ts';
/** The document's named schemas, e.g. `Schemas['WatchlistItem']`. */
export type Schemas = components['schemas'];
/** A watchlist item as GET, POST and PATCH /watchlist return it: the spec's fields and its health. */
export type WatchlistItem = Schemas['WatchlistItem'];
/** What an item's monitoring says now (`WatchlistItem['check_status']`; docs/watchlist.md "Item health"). */
export type CheckStatus = WatchlistItem['check_status'];
