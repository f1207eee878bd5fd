// The contract between the simulator's server and its eleven platform modules: each module
// mounts its own pages and JSON endpoints under /{platform}/ and renders events in its own
// shape; serve() (serve.ts) applies the event's behaviour first.
import type Router from '@koa/router';
import type { PlatformKey } from '../platform/registry.ts';
import type { ServeEvent } from './serve.ts';

export interface SimPlatform {
  readonly platform: PlatformKey;
  /** Adds this platform's routes; `router` is already prefixed with `/{platform}`. */
  mount(router: Router, serve: ServeEvent): void;
}
