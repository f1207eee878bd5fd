// Loads uWebSockets.js and proves its native binary is the one in use. The package's loader
// silently falls back to a JavaScript implementation built on `ws` when the binary does not
// load (wrong Node ABI, glibc too old, UWS_USE_FALLBACK set): everything would still work, at a
// fraction of the speed and without the memory bounds this stream relies on. Start-up refuses it.
import { createRequire } from 'node:module';
import type * as UwsModule from 'uWebSockets.js';

const require = createRequire(import.meta.url);

export type Uws = typeof UwsModule;

/** The module as its loader chose it (native or fallback). */
export const uws: Uws = require('uWebSockets.js') as Uws;

/** Where the native binary for this platform and Node ABI would be. */
export function nativeBinaryName(): string {
  return `uws_${process.platform}_${process.arch}_${process.versions.modules}.node`;
}

/** True when the loaded module is the native binary itself, not the fallback. */
export function isNativeUws(): boolean {
  try {
    const binary = require.resolve(`uWebSockets.js/binaries/${nativeBinaryName()}`);
    // require() returns the cached exports of a binary that loaded; the fallback is another object.
    return require(binary) === uws;
  } catch {
    return false;
  }
}

/** Throws, naming the cause, unless the native binary is in use. */
export function assertNativeUws(): void {
  if (isNativeUws()) return;
  const why = process.env.UWS_USE_FALLBACK ? 'UWS_USE_FALLBACK is set' : `${nativeBinaryName()} did not load on this machine`;
  throw new Error(
    `uWebSockets.js is running its slow JavaScript fallback (${why}); the stream needs the native binary ` +
      `(Node ${process.versions.node}, ABI ${process.versions.modules}; see README "Real-time stream")`,
  );
}
