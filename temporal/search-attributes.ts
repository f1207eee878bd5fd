// The custom search attributes that let operators find monitors and pollers in Temporal's
// visibility (`temporal workflow list --query`, the Web UI's filter), defined once here and
// registered from here on every server: the dev server's start-up flags (searchAttributeArgs) and,
// for any other server, ensureSearchAttributes when a worker process starts.
// Workflow code may import this file: its only runtime import is @temporalio/common (the rest are
// type imports, erased), so the workflow bundle pulls in no Node module through it.
import type { Connection } from '@temporalio/client';
import {
  defineSearchAttributeKey,
  SearchAttributeType,
  TypedSearchAttributes,
  type SearchAttributePair,
} from '@temporalio/common';
import type { temporal } from '@temporalio/proto';
import type { Log } from './sdk-logging.ts';

/** Every custom search attribute the service sets; typedSearchAttributes takes these keys. */
export const searchAttributeKeys = {
  /** The watchlist item's account. */
  AccountId: defineSearchAttributeKey('AccountId', SearchAttributeType.INT),
  /** The watchlist item's id. */
  ItemId: defineSearchAttributeKey('ItemId', SearchAttributeType.INT),
  /** The platform code, such as `pf_03`. */
  Platform: defineSearchAttributeKey('Platform', SearchAttributeType.KEYWORD),
  /** The target key `platform:region:event`. */
  EventKey: defineSearchAttributeKey('EventKey', SearchAttributeType.KEYWORD),
  /** A shard poller's shard number within its platform. */
  Shard: defineSearchAttributeKey('Shard', SearchAttributeType.INT),
} as const;

/** The SDK's SearchAttributeKey, which its package index does not export. */
export type AnySearchAttributeKey = ReturnType<typeof defineSearchAttributeKey<SearchAttributeType>>;

export const SEARCH_ATTRIBUTE_KEYS: readonly AnySearchAttributeKey[] = Object.values(searchAttributeKeys);

/** What a watchlist monitor carries. Ids may come as strings (pg returns bigint as text). */
export function monitorSearchAttributes(m: {
  accountId: number | string | bigint;
  itemId: number | string | bigint;
  platform: string;
  eventKey: string;
}): SearchAttributePair[] {
  return [
    { key: searchAttributeKeys.AccountId, value: toInt(m.accountId, 'AccountId') },
    { key: searchAttributeKeys.ItemId, value: toInt(m.itemId, 'ItemId') },
    { key: searchAttributeKeys.Platform, value: m.platform },
    { key: searchAttributeKeys.EventKey, value: m.eventKey },
  ];
}

/** What a shard poller carries. */
export function pollerSearchAttributes(p: { platform: string; shard: number }): SearchAttributePair[] {
  return [
    { key: searchAttributeKeys.Platform, value: p.platform },
    { key: searchAttributeKeys.Shard, value: toInt(p.shard, 'Shard') },
  ];
}

function toInt(value: number | string | bigint, name: string): number {
  const n = Number(value);
  // The server stores Int attributes as int64 but JSON carries them as doubles: past 2^53 they
  // would be found under the wrong number.
  if (!Number.isSafeInteger(n)) throw new Error(`search attribute ${name}: ${String(value)} is not a safe integer`);
  return n;
}

/**
 * `temporal server start-dev` flags that register the keys at start-up (the same form
 * @temporalio/testing builds from its `searchAttributes` option).
 */
export function searchAttributeArgs(keys: readonly AnySearchAttributeKey[] = SEARCH_ATTRIBUTE_KEYS): string[] {
  return keys.flatMap((k) => ['--search-attribute', `${k.name}=${TypedSearchAttributes.toMetadataType(k.type)}`]);
}

/** The command an operator runs where the worker may not register them (no operator rights). */
export function searchAttributeCreateCommand(namespace: string, keys: readonly AnySearchAttributeKey[] = SEARCH_ATTRIBUTE_KEYS): string {
  const names = keys.map((k) => `--name ${k.name} --type ${TypedSearchAttributes.toMetadataType(k.type)}`).join(' ');
  return `temporal operator search-attribute create --namespace ${namespace} ${names}`;
}

type IndexedValueType = temporal.api.enums.v1.IndexedValueType;

/**
 * The proto's IndexedValueType numbers, spelled out so this file needs @temporalio/proto for
 * types only (a test checks them against the proto).
 */
export const INDEXED_VALUE_TYPES: Readonly<Record<SearchAttributeType, IndexedValueType>> = {
  TEXT: 1 as IndexedValueType,
  KEYWORD: 2 as IndexedValueType,
  INT: 3 as IndexedValueType,
  DOUBLE: 4 as IndexedValueType,
  BOOL: 5 as IndexedValueType,
  DATETIME: 6 as IndexedValueType,
  KEYWORD_LIST: 7 as IndexedValueType,
};

export interface EnsureSearchAttributesOptions {
  /** Default: SEARCH_ATTRIBUTE_KEYS. */
  keys?: readonly AnySearchAttributeKey[];
  /** How long to wait for the server to list what was added. */
  timeoutMs?: number;
  pollMs?: number;
}

/** gRPC status ALREADY_EXISTS. */
const ALREADY_EXISTS = 6;
const RPC_DEADLINE_MS = 10_000;

/**
 * Registers on `namespace` whichever keys the server does not list yet, then waits until it lists
 * them all, so a worker never starts workflows the server would reject for an unknown attribute.
 * Idempotent; another process adding the same names first ("already exists", as older servers
 * answer) counts as success. Throws when a name exists with another type, or when the server
 * refuses (no operator rights, SQL visibility's slots for a type used up), saying what to do.
 */
export async function ensureSearchAttributes(
  connection: Pick<Connection, 'operatorService' | 'workflowService' | 'withDeadline'>,
  namespace: string,
  log: Pick<Log, 'info' | 'debug'>,
  opts: EnsureSearchAttributesOptions = {},
): Promise<void> {
  const keys = opts.keys ?? SEARCH_ATTRIBUTE_KEYS;
  const timeoutMs = opts.timeoutMs ?? 30_000;
  const pollMs = opts.pollMs ?? 250;
  const list = async () => {
    const res = await connection.withDeadline(Date.now() + RPC_DEADLINE_MS, () =>
      connection.operatorService.listSearchAttributes({ namespace }),
    );
    return res.customAttributes ?? {};
  };

  let missing = compare(await list(), keys, namespace);
  if (missing.length === 0) {
    log.debug({ namespace }, 'custom search attributes already registered');
    return;
  }
  const searchAttributes = Object.fromEntries(missing.map((k) => [k.name, INDEXED_VALUE_TYPES[k.type]]));
  try {
    await connection.withDeadline(Date.now() + RPC_DEADLINE_MS, () =>
      connection.operatorService.addSearchAttributes({ namespace, searchAttributes }),
    );
  } catch (err) {
    if (!isAlreadyExists(err)) {
      const message = (err as Error).message;
      // SQL visibility has a fixed number of columns per type (3 Int); temporalio/auto-setup
      // spends one of each on its Custom*Field examples unless told not to.
      const hint = /cannot have more than/i.test(message)
        ? 'Free a slot (temporal operator search-attribute list / remove; set SKIP_ADD_CUSTOM_SEARCH_ATTRIBUTES=true on temporalio/auto-setup), then restart the worker'
        : `Register them by hand: ${searchAttributeCreateCommand(namespace, keys)}`;
      throw new Error(
        `cannot register search attributes ${missing.map((k) => k.name).join(', ')} on namespace "${namespace}": ${message}. ${hint}`,
        { cause: err },
      );
    }
    log.debug({ namespace, err: (err as Error).message }, 'another process registered the search attributes first');
  }

  const deadline = Date.now() + timeoutMs;
  for (;;) {
    missing = compare(await list(), keys, namespace);
    if (missing.length === 0) break;
    if (Date.now() >= deadline) {
      throw new Error(
        `search attributes ${missing.map((k) => k.name).join(', ')} were added on namespace "${namespace}" ` +
          `but are still not listed after ${timeoutMs} ms`,
      );
    }
    await new Promise((r) => setTimeout(r, pollMs));
  }
  // Listed is not yet usable: a server on SQL visibility (go.temporal.io/server on PostgreSQL)
  // maps a namespace's custom attributes to its columns from the frontend's namespace cache, which
  // learns of new ones at its next refresh (10 s). Until then a workflow start that sets them is
  // refused ("has no mapping defined for search attribute AccountId"): a query on every one of
  // them is refused the same way, so it is asked until it is answered.
  const probe = keys.map((k) => `${k.name} = ${INDEXED_VALUE_TYPES[k.type] === INDEXED_VALUE_TYPES.INT ? '0' : "''"}`).join(' AND ');
  for (;;) {
    try {
      await connection.withDeadline(Date.now() + RPC_DEADLINE_MS, () => connection.workflowService.countWorkflowExecutions({ namespace, query: probe }));
      break;
    } catch (err) {
      if (Date.now() >= deadline) {
        throw new Error(`search attributes were added on namespace "${namespace}" but the server still refuses them in a query after ${timeoutMs} ms: ${(err as Error).message}`, { cause: err });
      }
      await new Promise((r) => setTimeout(r, pollMs));
    }
  }
  log.info({ namespace, added: Object.keys(searchAttributes) }, 'registered custom search attributes');
}

/** The keys not listed yet; a name listed with another type cannot be fixed from here. */
function compare(listed: Record<string, IndexedValueType>, keys: readonly AnySearchAttributeKey[], namespace: string): AnySearchAttributeKey[] {
  const missing: AnySearchAttributeKey[] = [];
  for (const k of keys) {
    const type = listed[k.name];
    if (type === undefined || type === null) {
      missing.push(k);
    } else if (type !== INDEXED_VALUE_TYPES[k.type]) {
      const found = Object.entries(INDEXED_VALUE_TYPES).find(([, v]) => v === type)?.[0] ?? String(type);
      throw new Error(
        `search attribute ${k.name} exists on namespace "${namespace}" as ${found}, not ${k.type}; ` +
          `remove it (temporal operator search-attribute remove --namespace ${namespace} --name ${k.name}) and restart the worker`,
      );
    }
  }
  return missing;
}

function isAlreadyExists(err: unknown): boolean {
  if (!err || typeof err !== 'object') return false;
  const { code, message } = err as { code?: unknown; message?: unknown };
  return code === ALREADY_EXISTS || (typeof message === 'string' && /already exists/i.test(message));
}
