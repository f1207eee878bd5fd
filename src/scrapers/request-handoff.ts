// The request source of http-pages.ts's keep-alive crawlers: an in-memory FIFO that hands each
// request to the crawler once and then forgets it. crawlee's default RequestQueue remembers
// every request it has ever seen (deduplication for whole-site crawls), which in a process that
// scrapes forever is a leak; our requests are one-shot and carry unique keys, so none is needed.
import type { IRequestManager, Request } from '@crawlee/core';

export class RequestHandoff implements IRequestManager {
  private readonly waiting: Request[] = [];
  private handled = 0;

  /**
   * @param isLive tells whether a queued request still has a caller waiting for it; requests whose
   *   caller gave up (abort, time-out) are dropped here instead of being fetched for nobody.
   */
  constructor(private readonly isLive: (request: Request) => boolean) {}

  push(request: Request): void {
    this.waiting.push(request);
  }

  async isFinished(): Promise<boolean> {
    // The crawlers run with keepAlive, which never asks; an empty handoff is never "finished".
    return false;
  }

  async isEmpty(): Promise<boolean> {
    this.dropAbandoned();
    return this.waiting.length === 0;
  }

  async handledCount(): Promise<number> {
    return this.handled;
  }

  getTotalCount(): number {
    return this.handled + this.waiting.length;
  }

  getPendingCount(): number {
    return this.waiting.length;
  }

  async fetchNextRequest<T extends object = object>(): Promise<Request<T> | null> {
    this.dropAbandoned();
    return (this.waiting.shift() as Request<T> | undefined) ?? null;
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<Request> {
    for (;;) {
      const next = await this.fetchNextRequest();
      if (!next) return;
      yield next;
    }
  }

  async markRequestHandled(): Promise<null> {
    this.handled++;
    return null;
  }

  async reclaimRequest(request: Request): Promise<null> {
    // Only reached if crawlee decides to retry, which maxRequestRetries: 0 rules out; queue it
    // again rather than lose it, the caller's own time limit still bounds the wait.
    this.waiting.push(request);
    return null;
  }

  async addRequest(): Promise<never> {
    throw new Error('RequestHandoff takes requests through push() only');
  }

  async addRequestsBatched(): Promise<never> {
    throw new Error('RequestHandoff takes requests through push() only');
  }

  private dropAbandoned(): void {
    while (this.waiting.length > 0 && !this.isLive(this.waiting[0]!)) this.waiting.shift();
  }
}
