// Loads uWebSockets.js and proves its native binary is the one in use. Two builds are used (see
// docs/node-versions.md): package.json's 20.30 build, whose loader silently falls back to a
// JavaScript implementation built on `ws` when the binary does not load (wrong Node ABI, glibc
// too old, UWS_USE_FALLBACK set): everything would still work, at a fraction of the speed and
// without the memory bounds this stream relies on; and the production image's build
// (deploy/image-uws.sh), whose loader throws instead. Start-up refuses both, naming the cause.
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type * as UwsModule from 'uWebSockets.js';

const require = createRequire(import.meta.url);

export type Uws = typeof UwsModule;

let loadError: string | null = null;

/**
 * The module as its loader chose it (native or fallback). When the loader threw, an empty object:
 * assertNativeUws(), which every start-up calls first, then throws with the loader's reason.
 */
export const uws: Uws = (() => {
  try {
    return require('uWebSockets.js') as Uws;
  } catch (err) {
    loadError = firstLines(err);
    return {} as Uws;
  }
})();

/** Where the native binary for this platform and Node ABI would be. */
export function nativeBinaryName(): string {
  return `uws_${process.platform}_${process.arch}_${process.versions.modules}.node`;
}

/** The binary's path in the installed build: beside its loader (20.57) or in ../binaries (20.30). */
function nativeBinaryPath(): string | null {
  let loader: string;
  try {
    loader = require.resolve('uWebSockets.js');
  } catch {
    return null;
  }
  const dir = path.dirname(loader);
  return [path.join(dir, nativeBinaryName()), path.join(dir, '..', 'binaries', nativeBinaryName())].find((p) => existsSync(p)) ?? null;
}

/** The installed build's package name and version (`uWebSockets.js` is an alias of it). */
export function installedUws(): { name: string; version: string } | null {
  let dir: string;
  try {
    dir = path.dirname(require.resolve('uWebSockets.js'));
  } catch {
    return null;
  }
  for (let i = 0; i < 3; i++, dir = path.dirname(dir)) {
    const file = path.join(dir, 'package.json');
    if (existsSync(file)) {
      const { name, version } = JSON.parse(readFileSync(file, 'utf8')) as { name: string; version: string };
      return { name, version };
    }
  }
  return null;
}

/** True when the loaded module is the native binary itself, not the fallback. */
export function isNativeUws(): boolean {
  const binary = nativeBinaryPath();
  if (!binary || loadError) return false;
  try {
    // require() returns the cached exports of a binary that loaded; the fallback is another object.
    return require(binary) === uws;
  } catch {
    return false;
  }
}

/** Why the native binary is not in use, as the loader or the dynamic linker said it. */
function nativeFailure(): string {
  if (loadError) return loadError;
  if (process.env.UWS_USE_FALLBACK) return 'UWS_USE_FALLBACK is set';
  const binary = nativeBinaryPath();
  if (!binary) return `this uWebSockets.js build has no ${nativeBinaryName()}`;
  try {
    require(binary);
    return `${nativeBinaryName()} loaded, but the loader chose its fallback`;
  } catch (err) {
    return `${nativeBinaryName()} did not load: ${firstLines(err)}`;
  }
}

function firstLines(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  return message.split('\n').filter((l) => l.trim()).slice(0, 2).join(' ');
}

/** Throws, naming the cause, unless the native binary is in use. */
export function assertNativeUws(): void {
  if (isNativeUws()) return;
  const state = loadError ? 'did not load' : 'is running its slow JavaScript fallback';
  const build = installedUws();
  throw new Error(
    `uWebSockets.js ${state} (${nativeFailure()}); the stream needs the native binary ` +
      `(Node ${process.versions.node}, ABI ${process.versions.modules}, ${build ? `${build.name} ${build.version}` : 'no build installed'}; ` +
      'see docs/node-versions.md)',
  );
}
