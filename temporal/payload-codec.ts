// Compresses large Temporal payloads with gzip. A scrape of a big seat map (20 sections of 1,000
// seats: 2.4 MB of JSON) is past Temporal's 2 MB payload limit, and such a run could never
// deliver its answer; gzipped it is 59 KB. Small payloads stay as they are (readable in the Web
// UI). Every client and worker of the service uses this data converter (temporalDataConverter).
import { promisify } from 'node:util';
import { gunzip, gzip } from 'node:zlib';
import { METADATA_ENCODING_KEY, type DataConverter, type Payload, type PayloadCodec } from '@temporalio/common';
// A CommonJS module whose named exports Node's ESM loader cannot see: read it as a whole.
import proto from '@temporalio/proto';

const ProtoPayload = proto.temporal.api.common.v1.Payload;
const ENCODING = 'binary/gzip';
/** Below this, compression saves little and costs readability in the UI. */
const MIN_BYTES = 16 * 1024;

const zip = promisify(gzip);
const unzip = promisify(gunzip);

export class GzipPayloadCodec implements PayloadCodec {
  async encode(payloads: Payload[]): Promise<Payload[]> {
    return Promise.all(
      payloads.map(async (payload) => {
        if (!payload.data || payload.data.length < MIN_BYTES) return payload;
        const whole = ProtoPayload.encode(payload).finish();
        return { metadata: { [METADATA_ENCODING_KEY]: Buffer.from(ENCODING) }, data: await zip(whole) };
      }),
    );
  }

  async decode(payloads: Payload[]): Promise<Payload[]> {
    return Promise.all(
      payloads.map(async (payload) => {
        const encoding = payload.metadata?.[METADATA_ENCODING_KEY];
        if (!encoding || Buffer.from(encoding).toString() !== ENCODING) return payload;
        if (!payload.data) throw new Error('gzip payload without data');
        return ProtoPayload.decode(await unzip(payload.data));
      }),
    );
  }
}

export const temporalDataConverter: DataConverter = { payloadCodecs: [new GzipPayloadCodec()] };
