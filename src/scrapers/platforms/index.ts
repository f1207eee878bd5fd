// Every platform's adapter factory, by platform key.
import type { PlatformKey } from '../../platform/registry.ts';
import type { AdapterDeps, PlatformAdapter } from '../types.ts';
import { createPf01 } from './pf_01.ts';
import { createPf02 } from './pf_02.ts';
import { createPf03 } from './pf_03.ts';
import { createPf04 } from './pf_04.ts';
import { createPf05 } from './pf_05.ts';
import { createPf06 } from './pf_06.ts';
import { createPf07 } from './pf_07.ts';
import { createPf08 } from './pf_08.ts';
import { createPf09 } from './pf_09.ts';
import { createPf10 } from './pf_10.ts';
import { createPf11 } from './pf_11.ts';

export const ADAPTER_FACTORIES: Record<PlatformKey, (deps: AdapterDeps) => PlatformAdapter> = {
  pf_01: createPf01,
  pf_02: createPf02,
  pf_03: createPf03,
  pf_04: createPf04,
  pf_05: createPf05,
  pf_06: createPf06,
  pf_07: createPf07,
  pf_08: createPf08,
  pf_09: createPf09,
  pf_10: createPf10,
  pf_11: createPf11,
};
