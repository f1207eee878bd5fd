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
  const declared = Number(ctx.get('content-length') || 0);
  if (declared > limit) {
    // Node discards an unread body after the answer; closing bounds how much it reads.
    ctx.set('Connection', 'close');
    return { kind: 'too_large', limit };
  }
  const req = ctx.req;
  const chunks: Buffer[] = [];
  let size = 0;
  if (req.readableEnded) return { kind: 'empty' };
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
  const text = Buffer.concat(chunks).toString('utf8');
  if (text.trim() === '') return { kind: 'empty' };
  try {
    return { kind: 'json', value: JSON.parse(text) };
  } catch (err) {
    return { kind: 'invalid', reason: (err as Error).message };
  }
}
