// pf_11 in the simulator. PLACEHOLDER: mounts nothing yet (every page answers 404).
import type { SimPlatform } from '../platform.ts';

export const pf11: SimPlatform = {
  platform: 'pf_11',
  mount() {},
};
