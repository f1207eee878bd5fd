// bench:alerts' side of the simulator: the control call that sets a scenario's event exactly
// (inventory, page behaviour, pf_01's arms, pf_06's listings moving during reads), and the requests each event has served (`hits`),
// read for every event at once (GET /_sim/events) and shared by every waiting step, at most
// every 200 ms. A step counts as seen once its event served enough requests after its control
// call (runner.ts); that is the simulator's count, never the service's state.
import type { Listing, Step } from './model.ts';
import type { Script } from './scenarios.ts';

const HITS_MAX_AGE_MS = 200;

export function simEventKey(s: Pick<Script, 'platform' | 'key'>): string {
  return `${s.platform.platform}/${s.key}`;
}

export class SimControl {
  private last: { at: number; hits: Map<string, number> } | null = null;
  private pending: Promise<Map<string, number>> | null = null;

  constructor(private readonly url: string) {}

  /** Sets the event; returns the requests it had served when the state changed. */
  async put(s: Script, inventory: readonly Listing[], step: Pick<Step, 'behaviour' | 'arms' | 'moves'>): Promise<number> {
    const body = {
      region: s.region,
      currency: s.platform.currency,
      name: `bench:alerts ${s.platform.platform} ${s.role}`,
      sections: inventory.map((l) => ({ ...l, restricted_view: false, accessible: false, presale: false })),
      behaviour: step.behaviour ?? 'ok',
      // A block asks for a one-second pause: the script goes on within a few polls.
      blocked_status: 429,
      retry_after_s: 1,
      arms: { v1: step.arms?.v1 ?? 'ok', v2: step.arms?.v2 ?? 'ok' },
      moves: step.moves ? { move: step.moves.move, reads: step.moves.reads } : null,
    };
    const res = await fetch(`${this.url}/_sim/${s.platform.platform}/events/${encodeURIComponent(s.key)}`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (res.status !== 200) throw new Error(`simulator PUT ${s.platform.platform} ${s.key}: ${res.status} ${await res.text()}`);
    return ((await res.json()) as { hits: number }).hits;
  }

  /** Requests served so far by every event, keyed `platform/key` (at most HITS_MAX_AGE_MS old). */
  async hits(): Promise<Map<string, number>> {
    if (this.last && Date.now() - this.last.at < HITS_MAX_AGE_MS) return this.last.hits;
    this.pending ??= (async () => {
      try {
        const res = await fetch(`${this.url}/_sim/events`);
        if (res.status !== 200) throw new Error(`simulator GET /_sim/events: ${res.status}`);
        const { events } = (await res.json()) as { events: { platform: string; key: string; hits: number }[] };
        const hits = new Map(events.map((e) => [`${e.platform}/${e.key}`, e.hits]));
        this.last = { at: Date.now(), hits };
        return hits;
      } finally {
        this.pending = null;
      }
    })();
    return this.pending;
  }
}
