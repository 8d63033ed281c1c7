/**
 * Dependencies per skill, end to end through the real runner and the real `skill-mcp deps install`:
 * a local wheel (and its dependency) served by a loopback PEP 503 index, an sdist-only package, a
 * source build that tries to reach the network, one that tries the kernel interfaces the run
 * filter closes, and an npm package with an install script served by a loopback registry. At this machine's level (root or not, bubblewrap or not — CI's four passes).
 */
import { spawn } from 'node:child_process';
import {
  appendFileSync,
  chmodSync,
  copyFileSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bwrapWorks, expectedLevel, isRoot } from '../levels.js';
import { makeNpmTarball, makeSdist, makeWheel } from '../fixtures/deps/packages.js';
import { startCanary, startNpmRegistry, startPypiIndex } from '../fixtures/deps/servers.js';
import type { Served } from '../fixtures/deps/servers.js';
import type { Built } from '../fixtures/deps/packages.js';
import { PY_PROBE, writeDepsSkills } from '../fixtures/deps/skills.js';
import { removeTree } from '../../runner/deps/store.js';
import { BIN, prepareAndRun, startRunner, tempDir, text, uidRange } from './harness.js';
import type { RunnerHandle } from './harness.js';
import { SOCKETS_PY, SYSCALLS_PY, keyctlHere } from './syscalls.js';

const level = expectedLevel(isRoot);
const range = uidRange(13);
let pypi: Served;
let npm: Served;
let canary: Served & { connections: () => number };
let root: string;
let stateDir: string;
let runner: RunnerHandle;
let env: Record<string, string>;
/** The two wheels of `uses-wheel` (the package and its dependency), for the file:// mirrors below. */
let wheels: Built[] = [];
/** The first `deps install` (every skill), which the source-build tests read too. */
let installAll = '';
// The first install runs in a session keyring holding a key, as an operator's login session would.
const KEY = `skill-mcp-deps-key-${process.pid}-${Date.now()}`;
const keyedSession = keyctlHere
  ? ['keyctl', 'session', '-', 'sh', '-c', `keyctl add user ${KEY} deps-key-secret @s >/dev/null && exec "$@"`, 'sh']
  : [];

/**
 * A package build (in-tree PEP 517 backend, run by pip in the install sandbox) that tries what the
 * run filter closes and records each answer in the module it builds (`BUILD_RESULT`, JSON).
 */
const KERNEL_BUILD = `import json
${SYSCALLS_PY}${SOCKETS_PY}out["keyctl_get_session"] = res(libc.syscall(NR["keyctl"], 0, ctypes.c_long(-3), 0))
out["request_key"] = res(libc.syscall(NR["request_key"], b"user", b"${KEY}", None, 0))
out["add_key_plant"] = res(libc.syscall(NR["add_key"], b"user", b"planted-by-a-build", b"x", 1, ctypes.c_long(-3)))
try:
    out["proc_keys"] = open("/proc/keys").read()
except OSError as e:
    out["proc_keys"] = os.strerror(e.errno)
sock("af_vsock", 40, socket.SOCK_STREAM)
sock("netlink_generic", 16, socket.SOCK_RAW, 16)
sock("netlink_netfilter", 16, socket.SOCK_RAW, 12)
sock("netlink_route", 16, socket.SOCK_RAW, 0)
sock("af_unix", socket.AF_UNIX, socket.SOCK_STREAM)
sock("af_inet", socket.AF_INET, socket.SOCK_STREAM)
out["unshare_user"] = res(libc.unshare(0x10000000))
out["unshare_net"] = res(libc.unshare(0x40000000))
out["io_uring_setup"] = res(libc.syscall(NR["io_uring_setup"], 8, ctypes.create_string_buffer(120)))
out["bpf"] = res(libc.syscall(NR["bpf"], 5, ctypes.create_string_buffer(128), 128))
result = json.dumps(out)`;

/** `skill-mcp deps install` (or list) as the operator runs it; resolves with its exit code and output. */
function deps(args: string[]): Promise<{ code: number | null; out: string }> {
  return cli(['deps', ...args]);
}

/** `skill-mcp ARGS` with the operator's settings (stdout and stderr together). */
function cli(args: string[]): Promise<{ code: number | null; out: string }> {
  return cliWith(env, args);
}

function cliWith(env: Record<string, string>, args: string[], prefix: string[] = []): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const bwrap = process.env['SKILL_MCP_BWRAP'] ? { SKILL_MCP_BWRAP: process.env['SKILL_MCP_BWRAP'] } : {};
    const [command, ...argv] = [...prefix, process.execPath, BIN, ...args];
    const child = spawn(command!, argv, {
      env: {
        PATH: process.env['PATH'] ?? '/usr/bin:/bin',
        HOME: process.env['HOME'] ?? '/tmp',
        LANG: 'C.UTF-8',
        ...bwrap,
        ...env,
        SKILL_MCP_UID_RANGE: range,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    if (args[0] !== 'doctor' && !args.includes('--json')) child.stderr.on('data', (c: Buffer) => (out += c.toString()));
    else child.stderr.resume();
    child.on('close', (code) => resolve({ code, out }));
  });
}

async function prepare(skill: string, script: string, args: string[] = []) {
  return runner.client.prepare({ skill, script, args });
}

/**
 * A local pip mirror as operators keep one: project pages in `simple/<project>/index.html` linking
 * to the wheels in a sibling `files/` folder (`../../files/<wheel>#sha256=…`). Returns its simple/ URL.
 */
function fileMirror(at: string): string {
  mkdirSync(join(at, 'files'), { recursive: true, mode: 0o755 });
  for (const wheel of wheels) {
    const project = wheel.name.split('-')[0]!;
    mkdirSync(join(at, 'simple', project), { recursive: true, mode: 0o755 });
    copyFileSync(wheel.file, join(at, 'files', wheel.name));
    chmodSync(join(at, 'files', wheel.name), 0o644);
    writeFileSync(
      join(at, 'simple', project, 'index.html'),
      `<!DOCTYPE html><html><body>\n<a href="../../files/${wheel.name}#sha256=${wheel.sha256}">${wheel.name}</a>\n</body></html>\n`,
      { mode: 0o644 },
    );
  }
  return `file://${join(at, 'simple')}/`;
}

function envDirOf(digest: string): string {
  return join(stateDir, 'envs', digest);
}

beforeAll(async () => {
  const files = tempDir('deps-files');
  const dep = makeWheel(files, 'skilltestdep', '2.0.0', { 'skilltestdep/__init__.py': 'VALUE = "from-dependency"\n' });
  const pkg = makeWheel(
    files,
    'skilltestpkg',
    '1.0.0',
    { 'skilltestpkg/__init__.py': 'import skilltestdep\nVALUE = "from-wheel"\ndef dep_value():\n    return skilltestdep.VALUE\n' },
    ['skilltestdep>=2'],
  );
  canary = await startCanary();
  // A build that tries the network two ways: through the proxy variables, and a direct connection.
  const sdist = makeSdist(
    files,
    'skilltestsrc',
    '1.0.0',
    'skilltestsrc',
    `import socket, urllib.request
tried = []
try:
    urllib.request.urlopen('http://127.0.0.1:${canary.port}/', timeout=5); tried.append('proxy:connected')
except Exception as e:
    tried.append('proxy:' + type(e).__name__)
s = socket.socket(); s.settimeout(5)
try:
    s.connect(('127.0.0.1', ${canary.port})); tried.append('direct:connected')
except Exception as e:
    tried.append('direct:' + type(e).__name__)
result = ' '.join(tried)`,
  );
  const kernelSdist = makeSdist(files, 'skilltestkernel', '1.0.0', 'skilltestkernel', KERNEL_BUILD);
  pypi = await startPypiIndex({ skilltestpkg: [pkg], skilltestdep: [dep], skilltestsrc: [sdist], skilltestkernel: [kernelSdist] });
  wheels = [pkg, dep];
  const npmPkg = {
    name: 'leftpad-test',
    version: '1.0.0',
    main: 'index.js',
    scripts: { install: "node -e \"require('fs').writeFileSync('install-script-ran', 'x')\"" },
  };
  const tarball = makeNpmTarball(files, npmPkg, { 'index.js': 'exports.pad = (s) => "[" + s + "]";\n' });
  npm = await startNpmRegistry([{ pkg: npmPkg, tarball }]);
  const lock = {
    name: 'node-skill',
    version: '1.0.0',
    lockfileVersion: 3,
    requires: true,
    packages: {
      '': { name: 'node-skill', version: '1.0.0', dependencies: { 'leftpad-test': '1.0.0' } },
      'node_modules/leftpad-test': {
        version: '1.0.0',
        resolved: `${npm.url}/leftpad-test/-/${tarball.name}`,
        integrity: tarball.integrity,
        hasInstallScript: true,
      },
    },
  };
  root = tempDir('deps-skills');
  writeDepsSkills(root, {
    'uses-wheel': {
      requirements: '    python: requirements.txt',
      run: [{ script: 'scripts/probe.py', interpreter: 'python3' }],
      files: { 'requirements.txt': '# the one package\nskilltestpkg==1.0.0\n', 'scripts/probe.py': PY_PROBE },
    },
    'needs-sdist': {
      requirements: '    python: ["skilltestsrc==1.0.0"]',
      run: [{ script: 'scripts/show.py', interpreter: 'python3' }],
      files: { 'scripts/show.py': 'import skilltestsrc\nprint(skilltestsrc.BUILD_RESULT)\n' },
    },
    'sdist-allowed': {
      requirements: '    python: ["skilltestsrc==1.0.0"]\n    source-builds: true',
      run: [{ script: 'scripts/show.py', interpreter: 'python3' }],
      files: { 'scripts/show.py': 'import skilltestsrc\nprint(skilltestsrc.BUILD_RESULT)\n' },
    },
    'sdist-kernel': {
      requirements: '    python: ["skilltestkernel==1.0.0"]\n    source-builds: true',
      run: [{ script: 'scripts/show.py', interpreter: 'python3' }],
      files: { 'scripts/show.py': 'import skilltestkernel\nprint(skilltestkernel.BUILD_RESULT)\n' },
    },
    'node-skill': {
      requirements: '    node: package.json',
      run: [{ script: 'scripts/show.js', interpreter: 'node' }],
      files: {
        'package.json': JSON.stringify({ name: 'node-skill', version: '1.0.0', dependencies: { 'leftpad-test': '1.0.0' } }),
        'package-lock.json': JSON.stringify(lock),
        'scripts/show.js': 'console.log(require("leftpad-test").pad("ok"), process.env.NODE_PATH);\n',
      },
    },
  });
  const base = tempDir('deps-runner');
  stateDir = join(base, 'state');
  env = {
    SKILLS_DIR: root,
    SKILL_MCP_STATE_DIR: stateDir,
    SKILL_MCP_PIP_INDEX_URL: `${pypi.url}/simple/`,
    SKILL_MCP_NPM_REGISTRY: npm.url,
  };
  runner = await startRunner({ env, base, stateDir, args: ['--uid-range', range] });
}, 60_000);

afterAll(async () => {
  await runner?.stop();
  await Promise.all([pypi?.close(), npm?.close(), canary?.close()]);
  // Environments are read-only (0555 folders): an ordinary user's rm needs them opened first.
  if (stateDir) removeTree(join(stateDir, 'envs'));
});

describe(`dependencies per skill (${level})`, () => {
  it('DEPS_MISSING before install: prepare is refused naming the exact command, and describe shows the environment missing', async () => {
    const refused = await prepare('uses-wheel', 'scripts/probe.py');
    expect(refused).toMatchObject({ ok: false, error: { code: 'DEPS_MISSING' } });
    if (refused.ok) return;
    expect(refused.error.message).toContain('skill-mcp deps install --skill uses-wheel');
    const described = await runner.client.describe(['uses-wheel']);
    expect(described.ok).toBe(true);
    if (!described.ok) return;
    const script = described.result.skills[0]!.scripts[0]!;
    expect(script).toMatchObject({ runnable: false, deps: [{ kind: 'python', state: 'missing' }] });
    expect(script.deps![0]!.digest).toMatch(/^[0-9a-f]{64}$/);
  });

  it('deps install builds each environment from the loopback index, says which index and network it used, and records what it resolved', async () => {
    const { code, out } = await cliWith(env, ['deps', 'install'], keyedSession);
    installAll = out;
    // needs-sdist cannot be built wheels-only: the command fails for it, after building the rest.
    expect(code, out).toBe(1);
    expect(out).toContain(`index ${pypi.url}/simple/ (SKILL_MCP_PIP_INDEX_URL)`);
    expect(out).toMatch(
      /uses-wheel: python environment [0-9a-f]{64}: installed 2 package\(s\): skilltestdep==2\.0\.0, skilltestpkg==1\.0\.0/,
    );
    expect(out).toMatch(/node-skill: node environment [0-9a-f]{64}: installed 1 package/);
    if (bwrapWorks) expect(out).toContain(`network: only 127.0.0.1:${pypi.port}, through the install's own proxy`);
    else expect(out).toContain('network: NOT confined (no bubblewrap)');
    const prepared = await prepare('uses-wheel', 'scripts/probe.py');
    expect(prepared.ok).toBe(true);
    if (!prepared.ok) return;
    const digest = prepared.result.willRun.deps![0]!.digest;
    expect(readFileSync(join(envDirOf(digest), 'resolved.txt'), 'utf8')).toBe('skilltestdep==2.0.0\nskilltestpkg==1.0.0\n');
    const manifest = JSON.parse(readFileSync(join(envDirOf(digest), 'manifest.json'), 'utf8')) as {
      digest: string;
      entries: { path: string }[];
    };
    expect(manifest.digest).toBe(digest);
    expect(manifest.entries.map((e) => e.path)).toContain('site/skilltestpkg/__init__.py');
    // Nothing half-built is left beside the environments.
    expect(readdirSync(join(stateDir, 'envs')).filter((n) => n.startsWith('.'))).toEqual([]);
    // deps list and doctor show the same environment, by digest, as ready; the missing one as missing.
    const listed = JSON.parse((await deps(['list', '--json'])).out) as { skill: string; digest: string; state: string }[];
    expect(listed).toContainEqual({ skill: 'uses-wheel', kind: 'python', digest, state: 'ready' });
    expect(listed.find((r) => r.skill === 'needs-sdist')).toMatchObject({ state: 'missing' });
    const doctor = JSON.parse((await cli(['doctor', '--json'])).out) as { environments: unknown[] };
    expect(doctor.environments).toContainEqual({ skill: 'uses-wheel', kind: 'python', digest, state: 'ready' });
    // A second install keeps what is there.
    const again = await deps(['install', '--skill', 'uses-wheel']);
    expect(again.out).toContain('already installed');
    expect(again.code).toBe(0);
  }, 240_000);

  it('a run imports its packages from the read-only environment; the preview binds the environment digest', async () => {
    const { willRun, result } = await prepareAndRun(runner.client, 'uses-wheel', 'scripts/probe.py');
    expect(willRun.deps).toEqual([{ kind: 'python', digest: expect.stringMatching(/^[0-9a-f]{64}$/), state: 'ready' }]);
    expect(willRun.envNames).toContain('PYTHONPATH');
    expect(text(result.stderr)).toBe('');
    const out = JSON.parse(text(result.stdout)) as Record<string, string>;
    expect(out).toMatchObject({ value: 'from-wheel', dep: 'from-dependency' });
    if (level === 'namespace' || level === 'namespace-uid') expect(out['pythonpath']).toBe('/deps/python/site');
  });

  it("a node run requires its package through NODE_PATH; the package's install script never ran", async () => {
    const { willRun, result } = await prepareAndRun(runner.client, 'node-skill', 'scripts/show.js');
    expect(text(result.stdout)).toMatch(/^\[ok\] /);
    const digest = willRun.deps![0]!.digest;
    expect(existsSync(join(envDirOf(digest), 'node_modules', 'leftpad-test', 'index.js'))).toBe(true);
    expect(existsSync(join(envDirOf(digest), 'node_modules', 'leftpad-test', 'install-script-ran'))).toBe(false);
  });

  it('attack: a requirement that needs a source build (only an sdist on the index) is refused unless source-builds: true', async () => {
    const refused = await prepare('needs-sdist', 'scripts/show.py');
    expect(refused).toMatchObject({ ok: false, error: { code: 'DEPS_MISSING' } });
    const { out } = await deps(['install', '--skill', 'needs-sdist']);
    expect(out).toContain('wheels only');
    expect(out).toMatch(/needs-sdist: python environment [0-9a-f]{64}: NOT installed: pip install exited 1/);
    expect(out).toMatch(/No matching distribution found for skilltestsrc==1\.0\.0/);
  }, 120_000);

  it('attack: a source build cannot reach anything but the index (and without bubblewrap source builds are refused)', async () => {
    const out = installAll;
    if (!bwrapWorks) {
      expect(out).toContain('source builds are allowed by the declaration but need the bubblewrap sandbox');
      expect(await prepare('sdist-allowed', 'scripts/show.py')).toMatchObject({ ok: false, error: { code: 'DEPS_MISSING' } });
      return;
    }
    expect(out).toMatch(/sdist-allowed: python environment [0-9a-f]{64}: installed 1 package/);
    expect(out).toContain(`the install's proxy refused 127.0.0.1:${canary.port}`);
    const { result } = await prepareAndRun(runner.client, 'sdist-allowed', 'scripts/show.py');
    // Through the proxy: refused (HTTP 403); directly: the build's own network namespace has nothing.
    expect(text(result.stdout).trim()).toBe('proxy:HTTPError direct:ConnectionRefusedError');
    expect(canary.connections()).toBe(0);
  });

  it("attack: a package's build (a source build pip runs in the install sandbox) cannot use keyrings, read /proc/keys, open AF_VSOCK or non-route netlink sockets, unshare, io_uring or bpf — the install has the run filter", async () => {
    const out = installAll;
    if (!bwrapWorks) {
      expect(out).toMatch(
        /sdist-kernel: python environment [0-9a-f]{64}: NOT installed: source builds are allowed by the declaration but need the bubblewrap sandbox/,
      );
      return;
    }
    expect(out).toContain('install sandbox: bubblewrap (');
    expect(out).toContain("the runs' syscall filter, /proc/keys hidden, a fresh, empty session keyring");
    expect(out).toMatch(/sdist-kernel: python environment [0-9a-f]{64}: installed 1 package/);
    const { result } = await prepareAndRun(runner.client, 'sdist-kernel', 'scripts/show.py');
    expect(text(result.stderr)).toBe('');
    const built = JSON.parse(text(result.stdout)) as Record<string, string>;
    const EPERM = 'Operation not permitted';
    expect(built).toEqual({
      // Kernel keyrings are not namespaced: without the filter a build would read the operator's session keyring.
      keyctl_get_session: EPERM,
      request_key: EPERM,
      add_key_plant: EPERM,
      // Covered by /dev/null, which bubblewrap binds nodev, so it cannot even be opened; unmasked it
      // lists every key the uid may view (the operator's, here).
      proc_keys: 'Permission denied',
      af_vsock: EPERM,
      netlink_generic: EPERM,
      netlink_netfilter: EPERM,
      // Without the filter unshare(CLONE_NEWUSER) answers ENOSPC (bubblewrap's --disable-userns): EPERM is the filter's.
      unshare_user: EPERM,
      unshare_net: EPERM,
      io_uring_setup: EPERM,
      bpf: EPERM,
      // What pip and npm need stays: unix and IP sockets, route netlink (getaddrinfo, getifaddrs).
      netlink_route: 'ok',
      af_unix: 'ok',
      af_inet: 'ok',
    });
    expect(text(result.stdout)).not.toContain(KEY);
  });

  it('attack: a run cannot write into its environment', async () => {
    const { result } = await prepareAndRun(runner.client, 'uses-wheel', 'scripts/probe.py', ['--write']);
    const out = JSON.parse(text(result.stdout)) as Record<string, string>;
    // Read-only files and folders (and at the namespace levels a read-only mount besides).
    expect(out['append']).toBe('EACCES');
    // (uid-sandbox makes /tmp, where the tests' state lives, read-only too: EROFS there.)
    expect(['EACCES', 'EROFS']).toContain(out['create']);
    if (level === 'same-uid') {
      // Same uid: the script owns the files and can make them writable again; the next run sees it.
      expect(out['chmod']).toBe('done');
      const refused = await prepare('uses-wheel', 'scripts/probe.py');
      expect(refused).toMatchObject({ ok: false, error: { code: 'DEPS_MISSING', message: expect.stringContaining('tampered') } });
      expect((await deps(['install', '--skill', 'uses-wheel'])).out).toContain('building it again');
    } else {
      // Not the owner (root's files) — or, as an ordinary user's runner, a read-only mount.
      expect(['EPERM', 'EROFS']).toContain(out['chmod']);
    }
    expect((await prepare('uses-wheel', 'scripts/probe.py')).ok).toBe(true);
  }, 120_000);

  it('DEPS_MISSING says which inputs of the address differ from the environment installed for the skill: other index settings than deps install had', async () => {
    const other = tempDir('deps-runner-other');
    // The same skills and state, but the index variables deps install had are not the runner's.
    const unset = await startRunner({ env: { ...env, SKILL_MCP_PIP_INDEX_URL: '' }, base: other, stateDir, args: ['--uid-range', range] });
    const links = tempDir('deps-other-links');
    const changed = await startRunner({
      env: { ...env, SKILL_MCP_PIP_FIND_LINKS: links },
      base: tempDir('deps-runner-links'),
      stateDir,
      args: ['--uid-range', range],
    });
    try {
      const without = await unset.client.prepare({ skill: 'uses-wheel', script: 'scripts/probe.py', args: [] });
      expect(without).toMatchObject({ ok: false, error: { code: 'DEPS_MISSING' } });
      if (without.ok) return;
      expect(without.error.message).toMatch(
        /the python environment installed for uses-wheel \([0-9a-f]{12}\) was built from other inputs: the index settings \(it was installed with SKILL_MCP_PIP_INDEX_URL \/ SKILL_MCP_PIP_FIND_LINKS set, and the runner has none of them; they are part of an environment's address/,
      );
      expect(without.error.message).not.toContain('requirement');
      const other = await changed.client.prepare({ skill: 'uses-wheel', script: 'scripts/probe.py', args: [] });
      expect(other).toMatchObject({ ok: false, error: { code: 'DEPS_MISSING' } });
      if (other.ok) return;
      expect(other.error.message).toContain('SKILL_MCP_PIP_INDEX_URL / SKILL_MCP_PIP_FIND_LINKS had other values when it was installed');
      // Security: no URL or host path of the index reaches the model.
      expect(other.error.message).not.toContain(links);
      expect(other.error.message).not.toContain(pypi.url);
      expect(other.error.message).toContain('skill-mcp deps install --skill uses-wheel');
    } finally {
      await Promise.all([unset.stop(), changed.stop()]);
    }
  }, 120_000);

  it('a file:// mirror whose pages link to its sibling files/ folder installs in the sandbox (that folder bound read-only, and said); as root, one the install uid cannot read is refused naming the folder and the variable', async () => {
    const mirror = tempDir('deps-mirror');
    const url = fileMirror(mirror);
    const { code, out } = await cliWith({ ...env, SKILL_MCP_PIP_INDEX_URL: url }, ['deps', 'install', '--skill', 'uses-wheel']);
    expect(out).toMatch(
      /uses-wheel: python environment [0-9a-f]{64}: installed 2 package\(s\): skilltestdep==2\.0\.0, skilltestpkg==1\.0\.0/,
    );
    expect(code, out).toBe(0);
    expect(out).toContain(`the pages of ${url} link to ${join(mirror, 'files')} (bound read-only as well)`);
    if (bwrapWorks)
      expect(out).toContain(`read-only, only these of the index configuration: ${join(mirror, 'files')}, ${join(mirror, 'simple')}`);
    if (!isRoot) return;
    // The mirror where root keeps it by habit: inside a 0700 folder the install's uid cannot enter.
    const locked = tempDir('deps-locked');
    const hidden = fileMirror(join(locked, 'mirror'));
    chmodSync(locked, 0o700);
    const refused = await cliWith({ ...env, SKILL_MCP_PIP_INDEX_URL: hidden }, ['deps', 'install', '--skill', 'uses-wheel']);
    expect(refused.code).toBe(1);
    expect(refused.out).toMatch(
      new RegExp(
        `NOT installed: the install runs as uid \\d+, which cannot read ${join(locked, 'mirror', 'files')} \\(from linked from the pages of SKILL_MCP_PIP_INDEX_URL\\): ${locked} is mode 0700`,
      ),
    );
    chmodSync(locked, 0o755);
  }, 120_000);

  it("without SKILL_MCP_PIP_INDEX_URL the installing user's own pip configuration is carried into the sandboxed install, and the output says so", async () => {
    const home = tempDir('deps-pipconf');
    const conf = join(home, 'pip.conf');
    writeFileSync(conf, `[global]\nindex-url = ${pypi.url}/simple/\n`);
    chmodSync(home, 0o755);
    const own = { ...env, SKILL_MCP_PIP_INDEX_URL: '', PIP_CONFIG_FILE: conf };
    const { out } = await cliWith(own, ['deps', 'install', '--skill', 'uses-wheel']);
    expect(out).toContain(`index ${pypi.url}/simple/ (from the installing user's pip configuration`);
    expect(out).toMatch(/uses-wheel: python environment [0-9a-f]{64}: installed 2 package\(s\)/);
    // Another index setting is another environment: this one sits beside the first.
    const listed = JSON.parse((await cliWith(own, ['deps', 'list', '--json'])).out) as { skill: string; digest: string; state: string }[];
    const mine = listed.find((r) => r.skill === 'uses-wheel')!;
    expect(mine.state).toBe('ready');
    const prepared = await prepare('uses-wheel', 'scripts/probe.py');
    expect(prepared.ok && prepared.result.willRun.deps![0]!.digest).not.toBe(mine.digest);
  }, 120_000);

  it('attack: an environment tampered with after install (a file edited, a file added) is refused on its digest until reinstalled', async () => {
    const prepared = await prepare('uses-wheel', 'scripts/probe.py');
    if (!prepared.ok) throw new Error(prepared.error.message);
    const dir = envDirOf(prepared.result.willRun.deps![0]!.digest);
    const module = join(dir, 'site', 'skilltestpkg', '__init__.py');
    // Edited in place, same size (only the digest can tell).
    const original = readFileSync(module, 'utf8');
    const mode = statSync(module).mode & 0o777;
    chmodSync(module, 0o644);
    writeFileSync(module, original.replace('from-wheel', 'from-whelk'));
    chmodSync(module, mode);
    const edited = await prepare('uses-wheel', 'scripts/probe.py');
    expect(edited).toMatchObject({ ok: false, error: { code: 'DEPS_MISSING' } });
    if (!edited.ok) expect(edited.error.message).toContain('site/skilltestpkg/__init__.py was changed after the install');
    expect((await deps(['install', '--skill', 'uses-wheel'])).out).toContain('was tampered with');
    expect((await prepare('uses-wheel', 'scripts/probe.py')).ok).toBe(true);
    // A file added (the folder's mode put back, so only the new entry differs).
    const site = join(dir, 'site');
    const siteMode = statSync(site).mode & 0o777;
    chmodSync(site, 0o755);
    appendFileSync(join(site, 'sitecustomize.py'), 'print("planted")\n');
    chmodSync(site, siteMode);
    const added = await prepare('uses-wheel', 'scripts/probe.py');
    expect(added).toMatchObject({ ok: false, error: { code: 'DEPS_MISSING' } });
    if (!added.ok) expect(added.error.message).toContain('site/sitecustomize.py was added after the install');
    await deps(['install', '--skill', 'uses-wheel']);
    const { result } = await prepareAndRun(runner.client, 'uses-wheel', 'scripts/probe.py');
    expect(JSON.parse(text(result.stdout))).toMatchObject({ value: 'from-wheel' });
  }, 240_000);
});
