// Reads a request body as JSON with a size limit. Each API decides how to answer a body that
// is missing, too large or not JSON, since each has its own envelope.
import type { Context } from 'koa';

export type JsonBody =
  | { kind: 'empty' }
  | { kind: 'json'; value: unknown }
  | { kind: 'invalid'; reason: string }
  | { kind: 'too_large'; limit: number };

/**
 * Reads the body without ever destroying the request: destroying an unread request destroys
 * its socket, and the answer (a 413) would be lost while the client is still uploading. Past
 * the limit the rest is read and discarded, up to as much again, so a client that overshoots
 * keeps its connection; a larger upload is left unread and the connection is closed once the
 * answer has been written.
 */
export async function readJsonBody(ctx: Context, limit: number): Promise<JsonBody> {
  const raw = await readRawBody(ctx, limit);
  if (raw.kind === 'too_large') return raw;
  const text = raw.text;
  if (text.trim() === '') return { kind: 'empty' };
  try {
    return { kind: 'json', value: JSON.parse(text) };
  } catch (err) {
    return { kind: 'invalid', reason: (err as Error).message };
  }
}

export type JsonObjectProblem = 'too_large' | 'invalid' | 'not_object';

export type JsonObjectBody =
  | { ok: true; value: Record<string, unknown> }
  | { ok: false; problem: JsonObjectProblem; message: string };

/**
 * A body that must be one JSON object. Each API turns a problem into its own envelope and
 * status; the connection handling of a too-large body is already done here (readJsonBody), so
 * callers must not add headers of their own. `expected` completes "body must be …" for a body
 * that is empty or JSON of another type.
 */
export async function readJsonObject(ctx: Context, limit: number, expected = 'a JSON object'): Promise<JsonObjectBody> {
  const body = await readJsonBody(ctx, limit);
  if (body.kind === 'too_large') return { ok: false, problem: 'too_large', message: `body is larger than ${body.limit} bytes` };
  if (body.kind === 'invalid') return { ok: false, problem: 'invalid', message: `body is not valid JSON: ${body.reason}` };
  const value = body.kind === 'json' ? body.value : undefined;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { ok: false, problem: 'not_object', message: `body must be ${expected}` };
  }
  return { ok: true, value: value as Record<string, unknown> };
}

/**
 * The body as text, read as readJsonBody describes; for a caller that must see the exact bytes
 * (a signature over them: the Stripe webhook).
 */
export async function readRawBody(ctx: Context, limit: number): Promise<{ kind: 'text'; text: string } | { kind: 'too_large'; limit: number }> {
  const declared = Number(ctx.get('content-length') || 0);
  if (declared > limit) {
    // Node discards an unread body after the answer; closing bounds how much it reads.
    ctx.set('Connection', 'close');
    return { kind: 'too_large', limit };
  }
  const req = ctx.req;
  const chunks: Buffer[] = [];
  let size = 0;
  if (req.readableEnded) return { kind: 'text', text: '' };
  const outcome = await new Promise<'complete' | 'too_large' | 'abandoned'>((resolve, reject) => {
    const done = (result: 'complete' | 'too_large' | 'abandoned', err?: Error) => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('close', onClose);
      if (err) reject(err);
      else resolve(result);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) chunks.push(chunk);
      else if (size > 2 * limit) {
        req.pause();
        done('abandoned');
      }
    };
    const onEnd = () => done(size > limit ? 'too_large' : 'complete');
    const onError = (err: Error) => done('complete', err);
    const onClose = () => done('complete', new Error('request closed before its body was complete'));
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    req.on('close', onClose);
  });
  if (outcome === 'abandoned') ctx.set('Connection', 'close');
  if (outcome !== 'complete') return { kind: 'too_large', limit };
  return { kind: 'text', text: Buffer.concat(chunks).toString('utf8') };
}
