// The environment Chromium is launched with (issue 25: the browser holds no secrets). It renders
// third-party pages (as another user and sandboxed where it can be: browser-user.ts), so it
// gets only what a browser needs to run (where
// programs, home and temporary files are, locale and time zone, fonts), never the worker's
// settings: not DATABASE_URL, not a key, whatever the process holds. Without an `env`, Playwright
// would hand it the worker's whole environment.

/** Variables passed through by name. */
const PASSED = new Set(['PATH', 'HOME', 'USER', 'LOGNAME', 'SHELL', 'TMPDIR', 'TZ', 'LANG', 'LANGUAGE', 'FONTCONFIG_PATH', 'FONTCONFIG_FILE']);
/** And by prefix: locale categories and the XDG base directories. */
const PASSED_PREFIXES = ['LC_', 'XDG_'];

export function browserEnvironment(env: NodeJS.ProcessEnv = process.env): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined) continue;
    if (PASSED.has(name) || PASSED_PREFIXES.some((p) => name.startsWith(p))) out[name] = value;
  }
  return out;
}
