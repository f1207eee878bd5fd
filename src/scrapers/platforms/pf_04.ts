// pf_04 adapter. PLACEHOLDER: not built yet.
import { ScrapeFailure, type AdapterDeps, type PlatformAdapter } from '../types.ts';

export function createPf04(_deps: AdapterDeps): PlatformAdapter {
  return {
    platform: 'pf_04',
    scrape: async () => {
      throw new ScrapeFailure('unsupported', 'pf_04 is not built yet');
    },
  };
}
