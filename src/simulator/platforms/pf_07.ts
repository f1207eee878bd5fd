// pf_07 in the simulator. PLACEHOLDER: mounts nothing yet (every page answers 404).
import type { SimPlatform } from '../platform.ts';

export const pf07: SimPlatform = {
  platform: 'pf_07',
  mount() {},
};
