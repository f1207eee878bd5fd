// One HTTP POST of a webhook delivery, made safe for URLs chosen by clients: the address check
// runs on the address actually connected to (the socket's lookup is ours, and a literal host is
// checked before connecting), so a name that resolved outside at create and inside now
// (DNS rebinding) is refused. No redirect is followed, at most 64 KB of the answer is read, and
// the whole exchange is bounded by a timeout. Never throws: the outcome says what happened.
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { addressProblem } from './address-rules.ts';
import { literalHost } from './url-rules.ts';

export const RESPONSE_LIMIT_BYTES = 64 * 1024;
export const DELIVERY_TIMEOUT_MS = 10_000;

export interface SendOptions {
  allowPrivateNetworks: boolean;
  timeoutMs?: number;
}

export interface SendOutcome {
  /** The answer's status; null when none came (refused, timed out, connection error). */
  status: number | null;
  headers: Record<string, string | string[] | undefined>;
  /** Up to RESPONSE_LIMIT_BYTES of the answer, as text. */
  body: string;
  /** Why no answer came, or null. Never carries the URL (it may hold a token). */
  error: string | null;
  latencyMs: number;
}

class RefusedAddress extends Error {}

/** dns.lookup, then the address rule on every address it gives; what connects is what was checked. */
function checkedLookup(): LookupFunction {
  return (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, '', 0);
      const list = addresses as LookupAddress[];
      for (const a of list) {
        const problem = addressProblem(a.address);
        if (problem) return callback(new RefusedAddress(`refused: ${problem}`), '', 0);
      }
      if (options.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, list);
      callback(null, list[0]!.address, list[0]!.family);
    });
  };
}

export function send(url: string, headers: Record<string, string>, body: string, opts: SendOptions): Promise<SendOutcome> {
  const started = performance.now();
  const done = (o: Omit<SendOutcome, 'latencyMs'>): SendOutcome => ({ ...o, latencyMs: Math.round(performance.now() - started) });
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    return Promise.resolve(done({ status: null, headers: {}, body: '', error: 'invalid url' }));
  }
  if (!opts.allowPrivateNetworks) {
    const literal = literalHost(target);
    const problem = literal === null ? null : addressProblem(literal);
    if (problem) return Promise.resolve(done({ status: null, headers: {}, body: '', error: `refused: ${problem}` }));
    if (target.protocol !== 'https:') return Promise.resolve(done({ status: null, headers: {}, body: '', error: 'refused: not https' }));
  }
  const client = target.protocol === 'https:' ? https : http;
  return new Promise((resolve) => {
    let settled = false;
    const finish = (o: Omit<SendOutcome, 'latencyMs'>) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(done(o));
    };
    const req = client.request(target, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'user-agent': 'ticket-market-webhooks/1', ...headers },
      // A fresh connection per attempt: a pooled socket would skip the lookup and its check.
      agent: false,
      lookup: opts.allowPrivateNetworks ? undefined : checkedLookup(),
    });
    const timer = setTimeout(() => {
      req.destroy();
      finish({ status: null, headers: {}, body: '', error: `timed out after ${opts.timeoutMs ?? DELIVERY_TIMEOUT_MS} ms` });
    }, opts.timeoutMs ?? DELIVERY_TIMEOUT_MS);
    req.on('error', (err) => {
      const code = (err as NodeJS.ErrnoException).code;
      finish({ status: null, headers: {}, body: '', error: err instanceof RefusedAddress ? err.message : code ? `connection failed (${code})` : 'connection failed' });
    });
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      const answer = () => finish({ status: res.statusCode ?? null, headers: res.headers, body: Buffer.concat(chunks).toString('utf8'), error: null });
      res.on('data', (chunk: Buffer) => {
        const room = RESPONSE_LIMIT_BYTES - size;
        if (room > 0) chunks.push(chunk.subarray(0, room));
        size += chunk.length;
        // Enough read: the status is what counts; the rest is not worth the wait or the memory.
        if (size >= RESPONSE_LIMIT_BYTES) {
          answer();
          res.destroy();
        }
      });
      res.on('end', answer);
      res.on('error', answer);
    });
    req.end(body);
  });
}
