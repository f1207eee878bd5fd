// pf_02 adapter. PLACEHOLDER: not built yet.
import { ScrapeFailure, type AdapterDeps, type PlatformAdapter } from '../types.ts';

export function createPf02(_deps: AdapterDeps): PlatformAdapter {
  return {
    platform: 'pf_02',
    scrape: async () => {
      throw new ScrapeFailure('unsupported', 'pf_02 is not built yet');
    },
  };
}
