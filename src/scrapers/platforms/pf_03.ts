// pf_03 adapter. PLACEHOLDER: not built yet.
import { ScrapeFailure, type AdapterDeps, type PlatformAdapter } from '../types.ts';

export function createPf03(_deps: AdapterDeps): PlatformAdapter {
  return {
    platform: 'pf_03',
    scrape: async () => {
      throw new ScrapeFailure('unsupported', 'pf_03 is not built yet');
    },
  };
}
