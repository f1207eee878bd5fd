// The platform simulator's control API (src/simulator/, PUT and GET /_sim/{platform}/events/{id})
// for tests that set events up exactly and count what the simulator served.
import type { Simulator } from '../../src/simulator/server.ts';
import { parseEventRef, type EventRef } from '../../src/platform/event-ref.ts';
import { PLATFORMS, type PlatformKey } from '../../src/platform/registry.ts';

/** Sets a simulated event exactly through the control API (PUT /_sim/{platform}/events/{id}). */
export async function putEvent(sim: Simulator, platform: string, eventId: string, body: unknown): Promise<void> {
  const res = await fetch(`${sim.url}/_sim/${platform}/events/${encodeURIComponent(eventId)}`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  if (res.status !== 200) throw new Error(`simulator PUT ${platform}/${eventId}: ${res.status} ${await res.text()}`);
}

/** Requests the simulator served for an event so far. */
export async function hits(sim: Simulator, platform: string, eventId: string): Promise<number> {
  const res = await fetch(`${sim.url}/_sim/${platform}/events/${encodeURIComponent(eventId)}`);
  return res.status === 200 ? ((await res.json()) as { hits: number }).hits : 0;
}

/** The platform's seeded demo event (the simulator's SimStore.reset). */
export function demoRef(platform: PlatformKey): EventRef {
  const info = PLATFORMS[platform];
  const region = platform === 'pf_08' ? 'au' : ((info.regions as readonly string[] | null)?.[0] ?? 'us');
  const parsed = parseEventRef(platform, info.event_id_example, region);
  if (!parsed.ok) throw new Error(parsed.message);
  return parsed.ref;
}
