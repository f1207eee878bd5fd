// One LISTEN per worker process on the membership relay's channel, shared by every shard poll
// activity the process runs: the relay NOTIFYs the shards a batch touched ("pf_03:1,pf_03:2"),
// and each subscribed shard reloads its members, so a POST, PATCH or DELETE reaches its poller
// in milliseconds. A (re)connect wakes every shard, since notifications are never replayed.
import { listen, type Listener } from '../../db/listener.ts';
import type { Logger } from '../logger.ts';

export const MEMBERS_CHANNEL = 'monitor_members';

/** The NOTIFY payload naming the shards a membership batch touched. */
export function shardKeysPayload(keys: Iterable<string>): string {
  return [...keys].join(',');
}

export function shardKey(platform: string, shard: number): string {
  return `${platform}:${shard}`;
}

export class MemberWatch {
  private listener: Listener | null = null;
  private readonly subscribers = new Map<string, Set<() => void>>();

  constructor(private readonly opts: { connectionString: string; log: Logger }) {}

  /** Calls `onChange` whenever the shard's members may have changed; returns the unsubscribe. */
  subscribe(key: string, onChange: () => void): () => void {
    let set = this.subscribers.get(key);
    if (!set) this.subscribers.set(key, (set = new Set()));
    set.add(onChange);
    this.listener ??= listen({
      connectionString: this.opts.connectionString,
      channels: [MEMBERS_CHANNEL],
      onWake: (payload) => this.wake(payload),
      log: this.opts.log,
      applicationName: 'member-watch',
    });
    return () => {
      set.delete(onChange);
      if (set.size === 0) this.subscribers.delete(key);
    };
  }

  private wake(payload: string | undefined): void {
    const keys = payload ? payload.split(',') : [...this.subscribers.keys()];
    for (const key of keys) for (const fn of this.subscribers.get(key) ?? []) fn();
  }

  async close(): Promise<void> {
    await this.listener?.close();
    this.listener = null;
  }
}
