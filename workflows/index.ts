// Every workflow the worker registers (bundled by Temporal from this file).
export { scrapeEvent } from './scrape-event.ts';
