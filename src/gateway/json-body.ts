// Reads a request body as JSON with a size limit. Each API decides how to answer a body that
// is missing, too large or not JSON, since each has its own envelope.
import type { Context } from 'koa';

export type JsonBody =
  | { kind: 'empty' }
  | { kind: 'json'; value: unknown }
  | { kind: 'invalid'; reason: string }
  | { kind: 'too_large'; limit: number };

export async function readJsonBody(ctx: Context, limit: number): Promise<JsonBody> {
  const declared = Number(ctx.get('content-length') || 0);
  if (declared > limit) return { kind: 'too_large', limit };
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of ctx.req) {
    size += (chunk as Buffer).length;
    if (size > limit) return { kind: 'too_large', limit };
    chunks.push(chunk as Buffer);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (text.trim() === '') return { kind: 'empty' };
  try {
    return { kind: 'json', value: JSON.parse(text) };
  } catch (err) {
    return { kind: 'invalid', reason: (err as Error).message };
  }
}
