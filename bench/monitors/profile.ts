// A sampling CPU profile of this process's main thread (node:inspector), summarised by where
// the code lives (Temporal SDK, knex, pg, the gateway, the activities, GC...), so the bench can
// say what the gateway + worker + relay process spends its CPU on. The workflow code runs in the
// SDK's worker thread and is not in this profile.
import { Session } from 'node:inspector/promises';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  hitCount?: number;
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples?: number[];
}

export interface ProfileSummary {
  /** Main-thread seconds sampled as busy (not idle). */
  busySeconds: number;
  wallSeconds: number;
  /**
   * [area, share of busy samples in %], largest first. Time in Node's core and native built-ins
   * (socket writes, microtasks...) counts for the nearest caller outside them, so `writev` called
   * by pg counts as pg.
   */
  areas: [string, number][];
  /** [function at file:line, share of busy samples in %], largest first. */
  functions: [string, number][];
}

const AREAS: [RegExp, string][] = [
  [/@temporalio\//, 'Temporal SDK (JS side: activations, payloads, gRPC client)'],
  [/node_modules\/(knex|tarn)\//, 'knex query builder / pool'],
  [/node_modules\/(pg|pg-protocol|pg-pool|pg-types|pgpass|pg-connection-string)\//, 'pg driver'],
  [/node_modules\/(pino|pino-std-serializers|sonic-boom|fast-redact|thread-stream)\//, 'logging (pino)'],
  [/node_modules\/(koa|@koa|koa-compose|http-errors|statuses|cookies|accepts|type-is|mime-types|negotiator|content-type|raw-body|on-finished)\//, 'Koa'],
  [/node_modules\/zod\//, 'zod validation'],
  [/node_modules\/(@crawlee|crawlee|cheerio|htmlparser2|domhandler|domutils|parse5|css-select|got-scraping|got|header-generator|@apify)\//, 'scraping (crawlee, cheerio, got)'],
  [/node_modules\/(@grpc|protobufjs|long)\//, 'gRPC / protobuf'],
  [/node_modules\/undici|node:internal\/deps\/undici/, 'fetch (undici: the bench and simulator calls)'],
  [/node_modules\/tsx\/|esbuild/, 'tsx loader'],
  [/\/src\/gateway\//, 'our gateway code'],
  [/\/src\/apis\//, 'our API code (watchlist store...)'],
  [/\/activities\/|\/src\/scrapers\/|\/src\/monitors\/snapshot|\/src\/monitors\/changes/, 'our activities (scrape, snapshot, evaluate)'],
  [/\/src\/monitors\/relay|\/db\//, 'our relay / db helpers'],
  [/\/bench\//, 'the bench itself'],
  [/\/src\/|\/temporal\/|\/workflows\//, 'our other code'],
  [/^node:/, 'Node.js core (JS)'],
];

function area(frame: CallFrame): string {
  const { url, functionName } = frame;
  if (!url) {
    if (functionName === '(garbage collector)') return 'garbage collection';
    if (functionName === '(program)') return 'native / V8 (program)';
    if (functionName === '(idle)') return '(idle)';
    if (functionName.startsWith('temporal_sdk')) return 'Temporal SDK (native bridge)';
    // (root) and anonymous native frames: pass through to the caller.
    return 'native built-ins';
  }
  for (const [re, name] of AREAS) if (re.test(url)) return name;
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url);
  if (pkg) return `dependency ${pkg[1]}`;
  return 'other';
}

export interface Profiler {
  stop(): Promise<ProfileSummary | null>;
}

export async function startProfile(): Promise<Profiler> {
  const session = new Session();
  session.connect();
  try {
    await session.post('Profiler.enable');
    await session.post('Profiler.setSamplingInterval', { interval: 2_000 });
    await session.post('Profiler.start');
  } catch {
    session.disconnect();
    return { stop: async () => null };
  }
  let stopped = false;
  return {
    stop: async () => {
      if (stopped) return null;
      stopped = true;
      try {
        const { profile } = (await session.post('Profiler.stop')) as unknown as { profile: Profile };
        return summarise(profile);
      } catch {
        return null;
      } finally {
        session.disconnect();
      }
    },
  };
}

const PASS_THROUGH = new Set(['native built-ins', 'Node.js core (JS)']);

function summarise(profile: Profile): ProfileSummary {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const owner = (n: ProfileNode): string => {
    let cur: ProfileNode | undefined = n;
    while (cur) {
      const a = area(cur.callFrame);
      if (!PASS_THROUGH.has(a)) return a;
      const up = parent.get(cur.id);
      cur = up === undefined ? undefined : byId.get(up);
    }
    return area(n.callFrame);
  };
  const total = profile.nodes.reduce((s, n) => s + (n.hitCount ?? 0), 0);
  const wallSeconds = (profile.endTime - profile.startTime) / 1e6;
  const perSample = total ? wallSeconds / total : 0;
  const byArea = new Map<string, number>();
  const byFunction = new Map<string, number>();
  let idle = 0;
  for (const n of profile.nodes) {
    const hits = n.hitCount ?? 0;
    if (!hits) continue;
    if (area(n.callFrame) === '(idle)') {
      idle += hits;
      continue;
    }
    const a = owner(n);
    byArea.set(a, (byArea.get(a) ?? 0) + hits);
    const file = n.callFrame.url.replace(/^.*\/node_modules\//, '').replace(/^file:\/\/.*?\/main\//, '');
    const name = `${n.callFrame.functionName || '(anonymous)'} ${file ? `${file}:${n.callFrame.lineNumber + 1}` : ''}`.trim();
    byFunction.set(name, (byFunction.get(name) ?? 0) + hits);
  }
  const busy = total - idle;
  const share = (m: Map<string, number>) =>
    [...m.entries()].sort((x, y) => y[1] - x[1]).map(([k, v]) => [k, busy ? (100 * v) / busy : 0] as [string, number]);
  return { busySeconds: busy * perSample, wallSeconds, areas: share(byArea), functions: share(byFunction).slice(0, 12) };
}
