// pf_01 adapter. PLACEHOLDER: not built yet.
import { ScrapeFailure, type AdapterDeps, type PlatformAdapter } from '../types.ts';

export function createPf01(_deps: AdapterDeps): PlatformAdapter {
  return {
    platform: 'pf_01',
    scrape: async () => {
      throw new ScrapeFailure('unsupported', 'pf_01 is not built yet');
    },
  };
}
