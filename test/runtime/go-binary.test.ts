// What the Go-tool installer takes from a tool's descriptor, beyond the Temporal CLI's case
// (test/temporal/binary.test.ts covers the lock, the rename and the retry): the path and cache
// variables it names, its own cache directory, and one attempt when it names no fallback toolchain.
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { cachedBinaryPath, resolveGoBinary } from '../../src/runtime/go-binary.ts';
import { STRIPE_MOCK } from '../support/stripe-mock-server.ts';

const FAKE_GO = `#!/bin/sh
echo "\${GOTOOLCHAIN:-local} $*" >> "$CALLS"
[ -n "$FAIL" ] && exit 1
printf '#!/bin/sh\\n' > "$GOBIN/stripe-mock"
chmod +x "$GOBIN/stripe-mock"
`;

let dir: string;
let env: NodeJS.ProcessEnv;
let go: string;

beforeEach(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'tm-gotool-'));
  go = path.join(dir, 'fake-go');
  await fs.writeFile(go, FAKE_GO, { mode: 0o755 });
  env = { PATH: '/usr/bin:/bin', HOME: dir, GOROOT: path.join(dir, 'no-go'), STRIPE_MOCK_CACHE: path.join(dir, 'cache'), CALLS: path.join(dir, 'calls') };
});

afterEach(async () => {
  await fs.rm(dir, { recursive: true, force: true });
});

const calls = async () => (await fs.readFile(path.join(dir, 'calls'), 'utf8').catch(() => '')).split('\n').filter(Boolean);

it("caches under the tool's own directory and cache variable", () => {
  expect(cachedBinaryPath(STRIPE_MOCK, { STRIPE_MOCK_CACHE: '/c', TEMPORAL_CLI_CACHE: '/t' })).toBe('/c/tm-stripe-mock/v0.203.0/stripe-mock');
  expect(cachedBinaryPath(STRIPE_MOCK, { HOME: '/h' })).toBe('/h/.cache/tm-stripe-mock/v0.203.0/stripe-mock');
});

it('uses the binary its path variable names, and names that variable when it is wrong', async () => {
  const given = path.join(dir, 'my-stripe-mock');
  await fs.writeFile(given, '#!/bin/sh\n', { mode: 0o755 });
  expect(await resolveGoBinary(STRIPE_MOCK, { env: { ...env, STRIPE_MOCK_PATH: given }, goBinary: go })).toBe(given);
  await expect(resolveGoBinary(STRIPE_MOCK, { env: { ...env, STRIPE_MOCK_PATH: path.join(dir, 'nope') }, goBinary: go })).rejects.toThrow(
    /^STRIPE_MOCK_PATH=.*nope: no such file$/,
  );
  expect(await calls()).toEqual([]);
});

it('builds the module at its version into the cache', async () => {
  const messages: string[] = [];
  expect(await resolveGoBinary(STRIPE_MOCK, { env, goBinary: go, onProgress: (m) => messages.push(m) })).toBe(cachedBinaryPath(STRIPE_MOCK, env));
  expect(await calls()).toEqual(['local install github.com/stripe/stripe-mock@v0.203.0']);
  expect(messages[0]).toMatch(/^building stripe-mock v0\.203\.0 .*it takes a few seconds$/);
});

it('tries once when the tool names no fallback toolchain, and says what that means', async () => {
  const messages: string[] = [];
  expect(await resolveGoBinary(STRIPE_MOCK, { env: { ...env, FAIL: '1' }, goBinary: go, onProgress: (m) => messages.push(m) })).toBeNull();
  expect(await calls()).toHaveLength(1);
  expect(messages.at(-1)).toBe('could not build stripe-mock; the Stripe tests cannot run');
  expect(await fs.readdir(path.join(dir, 'cache', 'tm-stripe-mock'))).toEqual([]);
});
