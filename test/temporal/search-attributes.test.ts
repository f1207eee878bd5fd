// The service's custom search attributes: registered on the run's server the way `npm start`'s dev
// server registers them (start-dev flags), registered idempotently on any other server by
// ensureSearchAttributes, set by workflow starts and found again through visibility queries (the
// operator queries of docs/monitoring.md), and importable from workflow code.
import fs from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { Client, Connection } from '@temporalio/client';
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.ts';
import { connectTemporal, type TemporalClient } from '../../temporal/client.ts';
import { devServerArgs } from '../../temporal/dev-server.ts';
import {
  INDEXED_VALUE_TYPES,
  SEARCH_ATTRIBUTE_KEYS,
  ensureSearchAttributes,
  monitorSearchAttributes,
  pollerSearchAttributes,
  searchAttributeArgs,
  searchAttributeKeys,
} from '../../temporal/search-attributes.ts';
import { TEST_NAMESPACE, temporalAddress, uniqueTaskQueue, withWorker } from '../support/temporal.ts';

const MODULE = fileURLToPath(new URL('../../temporal/search-attributes.ts', import.meta.url));
const FIXTURE_WORKFLOWS = fileURLToPath(new URL('./fixtures/search-attributes-workflow.ts', import.meta.url));
const log = createLogger('silent');
const { IndexedValueType } = temporal.api.enums.v1;

const EXPECTED = { AccountId: 'Int', ItemId: 'Int', Platform: 'Keyword', EventKey: 'Keyword', Shard: 'Int' };

describe('search attribute definitions', () => {
  it('are the five attributes, as start-dev flags for the dev server and the test server', () => {
    expect(Object.fromEntries(SEARCH_ATTRIBUTE_KEYS.map((k) => [k.name, k.type]))).toEqual({
      AccountId: 'INT',
      ItemId: 'INT',
      Platform: 'KEYWORD',
      EventKey: 'KEYWORD',
      Shard: 'INT',
    });
    const flags = Object.entries(EXPECTED).flatMap(([name, type]) => ['--search-attribute', `${name}=${type}`]);
    expect(searchAttributeArgs()).toEqual(flags);

    const args = devServerArgs({ port: 7233, uiPort: 8233, namespace: 'default' }, '/tmp/db.sqlite');
    const at = args.indexOf('--search-attribute');
    expect(at).toBeGreaterThan(0);
    expect(args.slice(at, at + flags.length)).toEqual(flags);
    expect(args.slice(0, 2)).toEqual(['server', 'start-dev']);
  });

  it('spell the proto IndexedValueType numbers right', () => {
    expect(INDEXED_VALUE_TYPES).toEqual({
      TEXT: IndexedValueType.INDEXED_VALUE_TYPE_TEXT,
      KEYWORD: IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD,
      INT: IndexedValueType.INDEXED_VALUE_TYPE_INT,
      DOUBLE: IndexedValueType.INDEXED_VALUE_TYPE_DOUBLE,
      BOOL: IndexedValueType.INDEXED_VALUE_TYPE_BOOL,
      DATETIME: IndexedValueType.INDEXED_VALUE_TYPE_DATETIME,
      KEYWORD_LIST: IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD_LIST,
    });
  });

  it('import nothing at run time but @temporalio/common, so workflow code may import them', async () => {
    const source = await fs.readFile(MODULE, 'utf8');
    const runtime = [...source.matchAll(/^import\s+(?!type\s)[^;]*?from\s+'([^']+)';/gms)].map((m) => m[1]);
    expect(runtime).toEqual(['@temporalio/common']);
  });

  it('build what monitors and pollers carry, ids given as text or numbers', () => {
    const monitor = monitorSearchAttributes({ accountId: '42', itemId: 7n, platform: 'pf_03', eventKey: 'pf_03:us:e1' });
    expect(monitor.map((p) => [p.key.name, p.value])).toEqual([
      ['AccountId', 42],
      ['ItemId', 7],
      ['Platform', 'pf_03'],
      ['EventKey', 'pf_03:us:e1'],
    ]);
    expect(pollerSearchAttributes({ platform: 'pf_03', shard: 2 }).map((p) => [p.key.name, p.value])).toEqual([
      ['Platform', 'pf_03'],
      ['Shard', 2],
    ]);
    expect(() => monitorSearchAttributes({ accountId: '9007199254740993', itemId: 1, platform: 'p', eventKey: 'k' })).toThrow(/AccountId/);
    expect(() => pollerSearchAttributes({ platform: 'p', shard: 1.5 })).toThrow(/Shard/);
  });
});

/** A stand-in operator service: what it lists, and what addSearchAttributes does. */
function fakeConnection(listed: Record<string, number>, add: (attrs: Record<string, number>) => Promise<void>, count: (query: string) => Promise<void> = async () => {}) {
  const calls = { list: 0, add: 0, count: 0 };
  const connection = {
    withDeadline: <T>(_deadline: number, fn: () => Promise<T>) => fn(),
    operatorService: {
      listSearchAttributes: async () => {
        calls.list++;
        return { customAttributes: { ...listed } };
      },
      addSearchAttributes: async (req: { searchAttributes: Record<string, number> }) => {
        calls.add++;
        await add(req.searchAttributes);
        return {};
      },
    },
    workflowService: {
      countWorkflowExecutions: async (req: { query: string }) => {
        calls.count++;
        await count(req.query);
        return { count: 0 };
      },
    },
  } as unknown as Pick<Connection, 'operatorService' | 'workflowService' | 'withDeadline'>;
  return { connection, calls };
}

const ALL_LISTED = Object.fromEntries(SEARCH_ATTRIBUTE_KEYS.map((k) => [k.name, INDEXED_VALUE_TYPES[k.type] as number]));

describe('ensureSearchAttributes against a stand-in server', () => {
  it('adds nothing when everything is listed', async () => {
    const { connection, calls } = fakeConnection(ALL_LISTED, async () => {});
    await ensureSearchAttributes(connection, 'ns', log);
    expect(calls).toEqual({ list: 1, add: 0, count: 0 });
  });

  it('adds only what is missing, and takes "already exists" from a racing worker as success', async () => {
    const listed: Record<string, number> = { AccountId: ALL_LISTED.AccountId!, Platform: ALL_LISTED.Platform! };
    const added: string[] = [];
    const { connection } = fakeConnection(listed, async (attrs) => {
      added.push(...Object.keys(attrs));
      // The other worker got there first.
      Object.assign(listed, ALL_LISTED);
      throw Object.assign(new Error('Search attribute ItemId already exists.'), { code: 6 });
    });
    await ensureSearchAttributes(connection, 'ns', log, { pollMs: 1 });
    expect(added.sort()).toEqual(['EventKey', 'ItemId', 'Shard']);
  });

  it('waits until the server lists what it added, and gives up after the bound', async () => {
    const listed: Record<string, number> = {};
    const slow = fakeConnection(listed, async () => {
      setTimeout(() => Object.assign(listed, ALL_LISTED), 30);
    });
    await ensureSearchAttributes(slow.connection, 'ns', log, { pollMs: 5, timeoutMs: 5_000 });
    expect(slow.calls.list).toBeGreaterThan(2);

    const never = fakeConnection({}, async () => {});
    await expect(ensureSearchAttributes(never.connection, 'ns', log, { pollMs: 5, timeoutMs: 50 })).rejects.toThrow(/still not listed after 50 ms/);
  });

  it('after adding, waits until a query on every attribute is answered (the frontend’s namespace cache knows them), and gives up after the bound', async () => {
    const listed: Record<string, number> = {};
    let refusals = 3;
    const queries: string[] = [];
    const cached = fakeConnection(
      listed,
      async () => void Object.assign(listed, ALL_LISTED),
      async (query) => {
        queries.push(query);
        if (refusals-- > 0) throw Object.assign(new Error('Namespace ns has no mapping defined for search attribute AccountId'), { code: 3 });
      },
    );
    await ensureSearchAttributes(cached.connection, 'ns', log, { pollMs: 1 });
    expect(cached.calls.count).toBe(4);
    expect(queries[0]).toBe("AccountId = 0 AND ItemId = 0 AND Platform = '' AND EventKey = '' AND Shard = 0");

    // Listed at once after the add, never usable.
    const neverListed: Record<string, number> = {};
    const stuck = fakeConnection(neverListed, async () => void Object.assign(neverListed, ALL_LISTED), async () => {
      throw Object.assign(new Error('Namespace ns has no mapping defined for search attribute Shard'), { code: 3 });
    });
    await expect(ensureSearchAttributes(stuck.connection, 'ns', log, { pollMs: 5, timeoutMs: 50 })).rejects.toThrow(/still refuses them in a query after 50 ms: .*mapping defined for search attribute Shard/);
  });

  it('refuses a name registered with another type, and says how to fix it', async () => {
    const { connection, calls } = fakeConnection({ ...ALL_LISTED, AccountId: INDEXED_VALUE_TYPES.KEYWORD }, async () => {});
    await expect(ensureSearchAttributes(connection, 'ns', log)).rejects.toThrow(
      /AccountId exists on namespace "ns" as KEYWORD, not INT.*search-attribute remove --namespace ns --name AccountId/,
    );
    expect(calls.add).toBe(0);
  });

  it('reports a refusal with the command that registers them by hand, or the slot hint', async () => {
    const denied = fakeConnection({}, async () => {
      throw Object.assign(new Error('Request unauthorized.'), { code: 7 });
    });
    await expect(ensureSearchAttributes(denied.connection, 'prod', log)).rejects.toThrow(
      /Request unauthorized\..*temporal operator search-attribute create --namespace prod --name AccountId --type Int --name ItemId --type Int --name Platform --type Keyword --name EventKey --type Keyword --name Shard --type Int/,
    );
    const full = fakeConnection({}, async () => {
      throw Object.assign(new Error('Unable to create search attributes: cannot have more than 3 search attribute of type Int.'), { code: 3 });
    });
    await expect(ensureSearchAttributes(full.connection, 'prod', log)).rejects.toThrow(/SKIP_ADD_CUSTOM_SEARCH_ATTRIBUTES=true/);
  });
});

describe('on the run\'s Temporal server', () => {
  let temporal: TemporalClient;
  beforeAll(async () => {
    temporal = await connectTemporal({ address: temporalAddress(), namespace: TEST_NAMESPACE });
  });
  afterAll(async () => {
    await temporal?.close();
  });

  async function listed(): Promise<Record<string, number>> {
    const res = await temporal.connection.operatorService.listSearchAttributes({ namespace: TEST_NAMESPACE });
    return (res.customAttributes ?? {}) as Record<string, number>;
  }

  it('has them from its start-up flags; ensureSearchAttributes registers the rest, idempotently, even run twice at once', async () => {
    const custom = await listed();
    for (const k of SEARCH_ATTRIBUTE_KEYS) expect(custom[k.name], k.name).toBe(INDEXED_VALUE_TYPES[k.type]);

    await ensureSearchAttributes(temporal.connection, TEST_NAMESPACE, log);
    await ensureSearchAttributes(temporal.connection, TEST_NAMESPACE, log);

    // A name the server does not have yet takes the add path for real. A fixed name: the run's
    // server is in memory, so each run starts without it and a rerun finds it there.
    const probe = defineSearchAttributeKey('TmEnsureProbe', SearchAttributeType.KEYWORD);
    const keys = [...SEARCH_ATTRIBUTE_KEYS, probe];
    await Promise.all([
      ensureSearchAttributes(temporal.connection, TEST_NAMESPACE, log, { keys }),
      ensureSearchAttributes(temporal.connection, TEST_NAMESPACE, log, { keys }),
    ]);
    await ensureSearchAttributes(temporal.connection, TEST_NAMESPACE, log, { keys });
    expect((await listed())[probe.name]).toBe(IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD);
  });

  /** Visibility is eventually consistent: the ids a query returns once it returns all of `want`. */
  async function findAll(client: Client, query: string, want: string[], ms = 15_000): Promise<string[]> {
    const deadline = Date.now() + ms;
    let ids: string[] = [];
    for (;;) {
      ids = [];
      for await (const wf of client.workflow.list({ query })) ids.push(wf.workflowId);
      if (want.every((id) => ids.includes(id)) || Date.now() > deadline) return ids;
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  it('finds a monitor by account and platform, and a poller by platform, with the queries of docs/monitoring.md', async () => {
    const { client } = temporal;
    // No worker serves this queue: the workflows stay open, their attributes in visibility.
    const taskQueue = uniqueTaskQueue('search-attributes');
    const accountId = 1_000_000_000 + Math.floor(Math.random() * 1_000_000_000);
    const itemId = accountId + 1;
    const suffix = `${process.pid}-${Date.now()}`;
    const monitorId = `sa-monitor-${suffix}`;
    const otherPlatformId = `sa-monitor-other-${suffix}`;
    const pollerId = `sa-poller-${suffix}`;
    const handles = [
      await client.workflow.start('watchlistMonitor', {
        taskQueue,
        workflowId: monitorId,
        typedSearchAttributes: monitorSearchAttributes({ accountId, itemId, platform: 'pf_03', eventKey: 'pf_03:us:ev-1' }),
      }),
      await client.workflow.start('watchlistMonitor', {
        taskQueue,
        workflowId: otherPlatformId,
        typedSearchAttributes: monitorSearchAttributes({ accountId, itemId: itemId + 1, platform: 'pf_01', eventKey: 'pf_01:us:ev-2' }),
      }),
      await client.workflow.start('shardPoller', {
        taskQueue,
        workflowId: pollerId,
        typedSearchAttributes: pollerSearchAttributes({ platform: 'pf_03', shard: 3 }),
      }),
    ];
    try {
      const described = await handles[0]!.describe();
      expect(described.typedSearchAttributes.get(searchAttributeKeys.AccountId)).toBe(accountId);
      expect(described.typedSearchAttributes.get(searchAttributeKeys.EventKey)).toBe('pf_03:us:ev-1');

      expect(await findAll(client, `AccountId = ${accountId} AND Platform = "pf_03"`, [monitorId])).toEqual([monitorId]);
      expect((await findAll(client, `WorkflowType = "watchlistMonitor" AND AccountId = ${accountId}`, [monitorId, otherPlatformId])).sort()).toEqual(
        [monitorId, otherPlatformId].sort(),
      );
      expect(await findAll(client, `ItemId = ${itemId} AND EventKey = "pf_03:us:ev-1"`, [monitorId])).toEqual([monitorId]);
      // Other tests may run pf_03 pollers on this server too: ours is among them, no monitor is.
      const pollers = await findAll(client, `WorkflowType = "shardPoller" AND Platform = "pf_03"`, [pollerId]);
      expect(pollers).toContain(pollerId);
      expect(pollers).not.toContain(monitorId);
      expect(await findAll(client, `WorkflowId = "${pollerId}" AND Shard = 3`, [pollerId])).toEqual([pollerId]);
    } finally {
      await Promise.all(handles.map((h) => h.terminate('test over').catch(() => {})));
    }
  });

  it('workflow code imports the keys and reads back what the start set', async () => {
    await withWorker({ workflowsPath: FIXTURE_WORKFLOWS, taskQueue: uniqueTaskQueue('search-attributes-wf') }, async ({ client, taskQueue }) => {
      const result = await client.workflow.execute('readSearchAttributes', {
        taskQueue,
        workflowId: `sa-read-${process.pid}-${Date.now()}`,
        typedSearchAttributes: [
          ...monitorSearchAttributes({ accountId: 42, itemId: 1, platform: 'pf_03', eventKey: 'pf_03:us:e' }),
          { key: searchAttributeKeys.Shard, value: 1 },
        ],
      });
      expect(result).toEqual({ accountId: 42, platform: 'pf_03', shard: 1 });
    });
  });
});
