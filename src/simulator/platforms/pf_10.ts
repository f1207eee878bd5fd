// pf_10 in the simulator. PLACEHOLDER: mounts nothing yet (every page answers 404).
import type { SimPlatform } from '../platform.ts';

export const pf10: SimPlatform = {
  platform: 'pf_10',
  mount() {},
};
