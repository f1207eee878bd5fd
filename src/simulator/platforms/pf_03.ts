// pf_03 in the simulator. PLACEHOLDER: mounts nothing yet (every page answers 404).
import type { SimPlatform } from '../platform.ts';

export const pf03: SimPlatform = {
  platform: 'pf_03',
  mount() {},
};
