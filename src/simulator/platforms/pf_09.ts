// pf_09 in the simulator. PLACEHOLDER: mounts nothing yet (every page answers 404).
import type { SimPlatform } from '../platform.ts';

export const pf09: SimPlatform = {
  platform: 'pf_09',
  mount() {},
};
