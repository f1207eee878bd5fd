// pf_02 in the simulator. PLACEHOLDER: mounts nothing yet (every page answers 404).
import type { SimPlatform } from '../platform.ts';

export const pf02: SimPlatform = {
  platform: 'pf_02',
  mount() {},
};
