// The simulated platforms, one module each (see platform.ts for the contract).
import type { SimPlatform } from '../platform.ts';
import { pf01 } from './pf_01.ts';
import { pf02 } from './pf_02.ts';
import { pf03 } from './pf_03.ts';
import { pf04 } from './pf_04.ts';
import { pf05 } from './pf_05.ts';
import { pf06 } from './pf_06.ts';
import { pf07 } from './pf_07.ts';
import { pf08 } from './pf_08.ts';
import { pf09 } from './pf_09.ts';
import { pf10 } from './pf_10.ts';
import { pf11 } from './pf_11.ts';

export const SIM_PLATFORMS: readonly SimPlatform[] = [pf01, pf02, pf03, pf04, pf05, pf06, pf07, pf08, pf09, pf10, pf11];
