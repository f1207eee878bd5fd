// Waiting on shared work without being tied to it: a caller that gives up (its signal aborts)
// stops waiting at once, while the work goes on for the others waiting on it (a clearance being
// made, a site's first answer).

/** Resolves with `work`, or rejects with `onAbort()` as soon as `signal` aborts, whichever comes first. */
export function untilAborted<T>(work: Promise<T>, signal: AbortSignal | undefined, onAbort: () => unknown): Promise<T> {
  if (!signal) return work;
  if (signal.aborted) return Promise.reject(onAbort());
  return new Promise<T>((resolve, reject) => {
    const abort = () => reject(onAbort());
    signal.addEventListener('abort', abort, { once: true });
    work.then(
      (v) => {
        signal.removeEventListener('abort', abort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', abort);
        reject(e);
      },
    );
  });
}
