// pf_05 in the simulator. PLACEHOLDER: mounts nothing yet (every page answers 404).
import type { SimPlatform } from '../platform.ts';

export const pf05: SimPlatform = {
  platform: 'pf_05',
  mount() {},
};
