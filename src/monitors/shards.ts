// How watched targets are spread over the shard pollers: each platform's targets are split into
// MONITOR_SHARDS_PER_PLATFORM shards by a stable hash of the target key, and each shard is one
// `shardPoller` workflow running one long-running poll activity. Kept free of Node modules:
// workflow code imports the workflow id rule.
import type { PlatformKey } from '../platform/registry.ts';

/** FNV-1a, 32 bits: stable across processes and releases (a target never changes shard). */
function fnv1a(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** The shard (0 .. shards-1) a target key belongs to. */
export function shardOf(target: string, shards: number): number {
  return fnv1a(target) % shards;
}

/**
 * The shard poller's workflow id: one per (monitors task queue, platform, shard). The queue is
 * part of it because it names the deployment the shard belongs to: two deployments (or two
 * test files) sharing a namespace keep their own pollers.
 */
export function shardPollerId(taskQueue: string, platform: PlatformKey | string, shard: number): string {
  return `poller:${taskQueue}:${platform}:${shard}`;
}
