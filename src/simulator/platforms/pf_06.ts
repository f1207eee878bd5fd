// pf_06 in the simulator. PLACEHOLDER: mounts nothing yet (every page answers 404).
import type { SimPlatform } from '../platform.ts';

export const pf06: SimPlatform = {
  platform: 'pf_06',
  mount() {},
};
