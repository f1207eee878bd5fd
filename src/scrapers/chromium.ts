// Is the Chromium that the client-rendered platforms are scraped with where CHROMIUM_PATH says,
// and the fix to print when it is not. Issue 14: on a first run without it, a pf_01 scrape
// answered playwright's launch error, retried four times, and nothing said what to install.
import { constants } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import { BROWSER_PLATFORMS } from '../platform/registry.ts';

/** True when `path` is a file this process may execute (what playwright needs to launch it). */
export async function chromiumFound(path: string): Promise<boolean> {
  try {
    // A directory passes an X_OK check too.
    if (!(await stat(path)).isFile()) return false;
    await access(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** For the operator (logs only; it names a path on the server, so never a client's answer). */
export function chromiumFix(path: string): string {
  return (
    `Chromium not found at ${path}: ${BROWSER_PLATFORMS.join(', ')} cannot be scraped. ` +
    'Install it with `apt-get install -y chromium`, or set CHROMIUM_PATH to a Chromium binary.'
  );
}
