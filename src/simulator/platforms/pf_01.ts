// pf_01 in the simulator. PLACEHOLDER: mounts nothing yet (every page answers 404).
import type { SimPlatform } from '../platform.ts';

export const pf01: SimPlatform = {
  platform: 'pf_01',
  mount() {},
};
