// uWebSockets.js silently falls back to a slow JavaScript implementation when its native
// binary does not load. The stream must run on the native one, and refuse to start otherwise.
import { describe, expect, it } from 'vitest';
import { installedUws, isNativeUws, nativeBinaryName, uws } from '../../src/stream/native-uws.ts';
import { databaseUrl, runTs } from '../support/harness.ts';

describe('native uWebSockets.js', () => {
  it('is the native binary in this process', () => {
    expect(nativeBinaryName()).toBe(`uws_${process.platform}_${process.arch}_${process.versions.modules}.node`);
    expect(isNativeUws()).toBe(true);
    // Only the native module has these (the fallback exports App and a few helpers).
    expect(typeof (uws as unknown as { getParts?: unknown }).getParts).toBe('function');
  });

  // Only package.json's build has a fallback; the production image's (deploy/image-uws.sh, run
  // in its check, deploy/check-trixie-image.sh) has none: its loader throws, and ignores the variable.
  it.skipIf(installedUws()?.name !== '@trufflesuite/uws-js-unofficial')('`npm run stream` refuses to start on the fallback, naming the cause', async () => {
    const r = await runTs('src/stream/main.ts', [], {
      ...process.env,
      UWS_USE_FALLBACK: '1',
      DATABASE_URL: databaseUrl(),
      STREAM_PORT: '0',
      METRICS_PORT: '0',
      LOG_LEVEL: 'silent',
    }, 30_000);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/uWebSockets\.js is running its slow JavaScript fallback \(UWS_USE_FALLBACK is set\)/);
  });
});
