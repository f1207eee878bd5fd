// The gzip payload codec: large payloads round-trip compressed, small ones and payloads of other
// encodings pass untouched, and a damaged compressed payload is an error, never a wrong value.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { defaultPayloadConverter, METADATA_ENCODING_KEY } from '@temporalio/common';
import { GzipPayloadCodec } from '../../temporal/payload-codec.ts';

const codec = new GzipPayloadCodec();

describe('GzipPayloadCodec', () => {
  it('compresses a large payload and restores it exactly', async () => {
    const value = { seats: Array.from({ length: 5_000 }, (_, i) => ({ row: `R${i % 30}`, seat: String(i), price: 49.5 })) };
    const payload = defaultPayloadConverter.toPayload(value);
    const [encoded] = await codec.encode([payload]);
    expect(Buffer.from(encoded!.metadata![METADATA_ENCODING_KEY]!).toString()).toBe('binary/gzip');
    expect(encoded!.data!.length).toBeLessThan(payload.data!.length / 10);
    const [decoded] = await codec.decode([encoded!]);
    expect(defaultPayloadConverter.fromPayload(decoded!)).toEqual(value);
  });

  it('leaves small payloads and other encodings as they are', async () => {
    const small = defaultPayloadConverter.toPayload({ ok: true });
    expect(await codec.encode([small])).toEqual([small]);
    expect(await codec.decode([small])).toEqual([small]);
  });

  it('property: any JSON value round-trips', async () => {
    await fc.assert(
      fc.asyncProperty(fc.oneof(fc.jsonValue(), fc.string({ minLength: 20_000, maxLength: 40_000 })), async (value) => {
        const payload = defaultPayloadConverter.toPayload(value);
        const decoded = await codec.decode(await codec.encode([payload]));
        expect(defaultPayloadConverter.fromPayload(decoded[0]!)).toEqual(JSON.parse(JSON.stringify(value)));
      }),
      { numRuns: 100 },
    );
  });

  it('rejects a damaged compressed payload', async () => {
    const [encoded] = await codec.encode([defaultPayloadConverter.toPayload('x'.repeat(50_000))]);
    const damaged = { ...encoded!, data: encoded!.data!.subarray(0, 20) };
    await expect(codec.decode([damaged])).rejects.toThrow();
  });
});
