// PLACEHOLDER: crawlee-backed PageFetcher (keep-alive HttpCrawler / CheerioCrawler). Not built yet.
import type { PageFetcher } from './types.ts';

export interface HttpPagesOptions {
  /** Requests in flight at once. */
  concurrency: number;
  /** Upper bound of one request. */
  timeoutMs: number;
}

export interface HttpPages extends PageFetcher {
  close(): Promise<void>;
}

export function createHttpPages(_options: HttpPagesOptions): HttpPages {
  const missing = async (): Promise<never> => {
    throw new Error('http-pages not built yet');
  };
  return { html: missing, json: missing, close: async () => {} };
}
