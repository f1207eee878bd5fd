// pf_04 in the simulator. PLACEHOLDER: mounts nothing yet (every page answers 404).
import type { SimPlatform } from '../platform.ts';

export const pf04: SimPlatform = {
  platform: 'pf_04',
  mount() {},
};
