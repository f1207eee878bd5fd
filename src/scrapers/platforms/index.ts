// Every platform's adapter factory, and the challenge page each platform shows, by platform key.
import type { PlatformKey } from '../../platform/registry.ts';
import type { BlockPageRule } from '../block-pages.ts';
import type { AdapterDeps, PlatformAdapter } from '../types.ts';
import { blockPage as pf01BlockPage, createPf01 } from './pf_01.ts';
import { blockPage as pf02BlockPage, createPf02 } from './pf_02.ts';
import { blockPage as pf03BlockPage, createPf03 } from './pf_03.ts';
import { blockPage as pf04BlockPage, createPf04 } from './pf_04.ts';
import { blockPage as pf05BlockPage, createPf05 } from './pf_05.ts';
import { blockPage as pf06BlockPage, createPf06 } from './pf_06.ts';
import { blockPage as pf07BlockPage, createPf07 } from './pf_07.ts';
import { blockPage as pf08BlockPage, createPf08 } from './pf_08.ts';
import { blockPage as pf09BlockPage, createPf09 } from './pf_09.ts';
import { blockPage as pf10BlockPage, createPf10 } from './pf_10.ts';
import { blockPage as pf11BlockPage, createPf11 } from './pf_11.ts';

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

/** How each platform's challenge or CAPTCHA page looks (each adapter says, block-pages.ts). */
export const BLOCK_PAGES: Record<PlatformKey, BlockPageRule> = {
  pf_01: pf01BlockPage,
  pf_02: pf02BlockPage,
  pf_03: pf03BlockPage,
  pf_04: pf04BlockPage,
  pf_05: pf05BlockPage,
  pf_06: pf06BlockPage,
  pf_07: pf07BlockPage,
  pf_08: pf08BlockPage,
  pf_09: pf09BlockPage,
  pf_10: pf10BlockPage,
  pf_11: pf11BlockPage,
};
