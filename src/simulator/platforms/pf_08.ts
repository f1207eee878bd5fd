// pf_08 in the simulator. PLACEHOLDER: mounts nothing yet (every page answers 404).
import type { SimPlatform } from '../platform.ts';

export const pf08: SimPlatform = {
  platform: 'pf_08',
  mount() {},
};
