/**
 * The deployment recipes of docs/hosting.md, checked as far as this machine can check them
 * (`docker compose config` is not here): deploy/compose.yaml is parsed and every front/runner pair
 * must agree on what a mismatch would break (skills, grant, socket, secret, Redis), and
 * deploy/systemd/ passes `systemd-analyze verify` with the built bin in place of /usr/bin/skill-mcp.
 * Every command line goes through the real option parsers, every variable is one the code reads,
 * and docs/hosting.md names each with the process that needs it.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import { parse } from 'yaml';
import { parseRunnerOptions } from '../../runner/options.js';
import { parseRedisUrl } from '../../runner/redis/options.js';
import { readHttpOptions } from '../../server/http/options.js';
import { readGrantSource } from '../../shared/grant.js';
import { REPO, SERVER_JS, tempDir } from './harness.js';

const DEPLOY = join(REPO, 'deploy');
const HOSTING = readFileSync(join(REPO, 'docs/hosting.md'), 'utf8');

/** Every variable name the code reads (a string literal in the sources). */
function variablesTheCodeReads(): Set<string> {
  const names = new Set<string>();
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.ts'))
        for (const m of readFileSync(path, 'utf8').matchAll(/'((?:MCP|SKILL_MCP)_[A-Z_]+|SKILLS_DIR)'/g)) names.add(m[1]!);
    }
  };
  for (const dir of ['runner', 'server', 'shared', 'cli']) walk(join(REPO, dir));
  return names;
}
const KNOWN = variablesTheCodeReads();

/** The row of docs/hosting.md's variable table that names `variable`: its runner and front cells. */
function documented(variable: string): { runner: string; front: string } | undefined {
  for (const line of HOSTING.split('\n')) {
    const cells = line.split('|').map((c) => c.trim());
    if (cells.length >= 5 && [...cells[1]!.matchAll(/`([A-Z_]+)`/g)].some((m) => m[1] === variable))
      return { runner: cells[2]!, front: cells[3]! };
  }
  return undefined;
}

/** `${VAR}` / `${VAR:?msg}` as compose would interpolate them, from a fixed .env. */
const DOTENV: Record<string, string> = { MCP_CONFIRM_SECRET: 'a'.repeat(64), REDIS_PASSWORD: 'p'.repeat(32) };
function interpolate(value: string): string {
  return value.replace(/\$\{([A-Z_]+)(?::\?[^}]*)?\}/g, (_, name: string) => DOTENV[name] ?? '');
}

interface Service {
  image?: string;
  user?: string;
  command?: string[];
  environment?: Record<string, string>;
  volumes?: string[];
  depends_on?: string[];
  [key: string]: unknown;
}

const SERVICE_KEYS = new Set([
  'build',
  'image',
  'user',
  'command',
  'entrypoint',
  'environment',
  'env_file',
  'volumes',
  'depends_on',
  'ports',
  'secrets',
  'cap_add',
  'security_opt',
  'restart',
  'healthcheck',
]);

describe('deploy/compose.yaml', () => {
  const compose = parse(readFileSync(join(DEPLOY, 'compose.yaml'), 'utf8'), { merge: true }) as {
    services: Record<string, Service>;
    volumes: Record<string, unknown>;
    secrets: Record<string, unknown>;
  };
  const services = compose.services;
  const fronts = Object.keys(services).filter((n) => n.startsWith('front-'));
  const env = (name: string): Record<string, string> =>
    Object.fromEntries(Object.entries(services[name]!.environment ?? {}).map(([k, v]) => [k, interpolate(String(v))]));
  const mounts = (name: string): Map<string, string> =>
    new Map((services[name]!.volumes ?? []).map((v) => v.split(':')).map(([volume, path]) => [path!, volume!]));

  test('its structure: known top-level and service keys, named volumes and secrets declared, no extension key left unmerged', () => {
    expect(
      Object.keys(compose)
        .filter((k) => !k.startsWith('x-'))
        .sort(),
    ).toEqual(['name', 'secrets', 'services', 'volumes']);
    for (const [name, service] of Object.entries(services)) {
      expect(
        Object.keys(service).filter((k) => !SERVICE_KEYS.has(k)),
        name,
      ).toEqual([]);
      for (const [, volume] of mounts(name)) expect(Object.keys(compose.volumes), `${name} mounts ${volume}`).toContain(volume);
      for (const secret of (service['secrets'] as string[] | undefined) ?? []) expect(Object.keys(compose.secrets)).toContain(secret);
      for (const dep of service.depends_on ?? []) expect(Object.keys(services)).toContain(dep);
    }
    expect(fronts.length).toBeGreaterThanOrEqual(2);
  });

  test('each front has its own runner, and the pair agrees: skills and grant (else CONFIG_MISMATCH), socket, front uid, secret', () => {
    const socketVolumes = new Set<string>();
    const stateVolumes = new Set<string>();
    for (const front of fronts) {
      const runner = front.replace('front-', 'runner-');
      expect(Object.keys(services), `${front} needs ${runner}`).toContain(runner);
      const [f, r] = [env(front), env(runner)];
      expect(f['MCP_SKILLS_PATH']).toBeTruthy();
      expect(r['MCP_SKILLS_PATH']).toBe(f['MCP_SKILLS_PATH']);
      expect(r['MCP_SKILL_RUN']).toBe(f['MCP_SKILL_RUN']);
      expect(readGrantSource(f)).toMatchObject({ kind: 'owner' });
      expect(readGrantSource(f)).not.toHaveProperty('error');
      // The same skills volume, read-only, at that path in both.
      expect(mounts(runner).get(f['MCP_SKILLS_PATH']!)).toBe(mounts(front).get(f['MCP_SKILLS_PATH']!));
      // The runner's flags, through the runner's own parser.
      const opts = parseRunnerOptions(services[runner]!.command!.slice(1), r);
      expect(services[runner]!.command![0]).toBe('runner');
      expect(services[runner]!.user).toBe('0:0');
      expect(services[front]!.user).toBe(`${opts.frontUid}:${opts.frontGid}`);
      expect(f['SKILL_MCP_RUNNER_SOCKET']).toBe(opts.socketPath);
      // The socket's folder is a volume this pair shares and nobody else mounts.
      const socketDir = opts.socketPath.replace(/\/[^/]+$/, '');
      const volume = mounts(runner).get(socketDir)!;
      expect(volume).toBeTruthy();
      expect(mounts(front).get(socketDir)).toBe(volume);
      expect(
        Object.keys(services)
          .filter((s) => [...mounts(s).values()].includes(volume))
          .sort(),
      ).toEqual([front, runner].sort());
      socketVolumes.add(volume);
      stateVolumes.add(mounts(runner).get(opts.stateDir)!);
      // The front's flags, through the front's own parser (the token file is read at start: left out here).
      const http = readHttpOptions(services[front]!.command!.slice(1), { ...f, SKILL_MCP_HTTP_TOKEN_FILE: '' });
      expect(services[front]!.command![0]).toBe('--http');
      expect(http).toMatchObject({ host: '0.0.0.0', metrics: { port: expect.any(Number) } });
      expect(f['SKILL_MCP_HTTP_TOKEN_FILE']).toMatch(/^\/run\/secrets\//);
      expect(f['MCP_CONFIRM_SECRET']).toBe(r['MCP_CONFIRM_SECRET']);
    }
    expect(socketVolumes.size).toBe(fronts.length);
    expect(stateVolumes.size).toBe(fronts.length);
  });

  test('every runner shares one Redis ledger and one secret, under its own audit host id; Redis keeps an fsynced append-only file', () => {
    const runners = Object.keys(services).filter((n) => n.startsWith('runner-'));
    const urls = new Set(runners.map((r) => env(r)['SKILL_MCP_REDIS_URL']));
    expect(urls.size).toBe(1);
    const target = parseRedisUrl([...urls][0]!);
    expect(target).toMatchObject({ host: 'redis', password: DOTENV['REDIS_PASSWORD'] });
    expect(new Set(runners.map((r) => env(r)['MCP_CONFIRM_SECRET'])).size).toBe(1);
    expect(new Set(runners.map((r) => env(r)['SKILL_MCP_AUDIT_HOST_ID'])).size).toBe(runners.length);
    const redis = services['redis']!.command!.map(interpolate).join(' ');
    expect(redis).toContain('--appendonly yes');
    expect(redis).toContain('--appendfsync always');
    expect(redis).toContain(`--requirepass ${DOTENV['REDIS_PASSWORD']}`);
    // No service but the runners is given the Redis password.
    for (const name of Object.keys(services).filter((n) => !n.startsWith('runner-') && n !== 'redis'))
      expect(JSON.stringify(env(name))).not.toContain(DOTENV['REDIS_PASSWORD']);
  });

  test('every variable is one the code reads, and docs/hosting.md lists it for the process that gets it', () => {
    for (const name of Object.keys(services).filter((n) => n !== 'redis')) {
      const process = name.startsWith('runner-') ? 'runner' : 'front';
      for (const variable of Object.keys(env(name))) {
        expect(KNOWN, `${name}: ${variable}`).toContain(variable);
        expect(documented(variable)?.[process], `docs/hosting.md: ${variable} for the ${process}`).toMatch(
          /^(required|optional|recommended|or )/,
        );
      }
    }
  });
});

/** KEY=value lines of an environment file, read the way systemd does (shell-like quotes). */
function readEnvFile(path: string): Record<string, string> {
  const out = spawnSync('sh', ['-c', 'set -a; . "$1"; env -0', 'sh', path], { encoding: 'utf8', env: {} });
  const names = readFileSync(path, 'utf8')
    .split('\n')
    .map((l) => /^([A-Z_]+)=/.exec(l)?.[1])
    .filter((n): n is string => n !== undefined);
  const all = Object.fromEntries(
    out.stdout
      .split('\0')
      .filter(Boolean)
      .map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
  );
  return Object.fromEntries(names.map((n) => [n, all[n]!]));
}

/** The argv of a unit's ExecStart, without the binary. */
function execArgs(unit: string): string[] {
  const line = /^ExecStart=(.*)$/m.exec(unit)![1]!;
  return line.split(/\s+/).slice(1);
}

describe('deploy/systemd', () => {
  const dir = join(DEPLOY, 'systemd');
  const runnerUnit = readFileSync(join(dir, 'skill-mcp-runner.service'), 'utf8');
  const frontUnit = readFileSync(join(dir, 'skill-mcp-front.service'), 'utf8');
  const skills = readEnvFile(join(dir, 'skills.env'));
  const runnerEnv = readEnvFile(join(dir, 'runner.env'));
  const frontEnv = readEnvFile(join(dir, 'front.env'));

  test('the runner runs as root and the front as its own user; both read skills.env; the front needs the runner', () => {
    expect(runnerUnit).toMatch(/^User=root$/m);
    expect(frontUnit).toMatch(/^User=skillfront$/m);
    for (const unit of [runnerUnit, frontUnit]) expect(unit).toMatch(/^EnvironmentFile=\/etc\/skill-mcp\/skills\.env$/m);
    expect(runnerUnit).toMatch(/^EnvironmentFile=\/etc\/skill-mcp\/runner\.env$/m);
    expect(frontUnit).toMatch(/^EnvironmentFile=\/etc\/skill-mcp\/front\.env$/m);
    expect(frontUnit).toMatch(/^Requires=skill-mcp-runner\.service$/m);
    expect(frontUnit).toMatch(/^After=skill-mcp-runner\.service$/m);
  });

  test('the command lines parse with the real parsers and agree: socket, front secret, grant, redis', () => {
    const opts = parseRunnerOptions(execArgs(runnerUnit).slice(1), { ...skills, ...runnerEnv });
    expect(execArgs(runnerUnit)[0]).toBe('runner');
    expect(frontEnv['SKILL_MCP_RUNNER_SOCKET']).toBe(opts.socketPath);
    expect(opts.frontSecret).toEqual({ from: 'file', path: frontEnv['SKILL_MCP_FRONT_SECRET_FILE'] });
    expect(opts.stateDir).toBe('/var/lib/skill-mcp');
    expect(runnerUnit).toMatch(/^StateDirectory=skill-mcp$/m);
    const http = readHttpOptions(execArgs(frontUnit).slice(1), { ...skills, ...frontEnv, SKILL_MCP_HTTP_TOKEN_FILE: '' });
    expect(http.metrics).toEqual({ host: '127.0.0.1', port: 9464 });
    expect(readGrantSource(skills)).toEqual({
      kind: 'owner',
      rows: [{ skill: 'commit-message', script: 'scripts/check-message.js', env: [], egress: [], secrets: [], index: 0 }],
    });
    expect(parseRedisUrl(runnerEnv['SKILL_MCP_REDIS_URL']!)).toMatchObject({ tls: true, username: 'skill-mcp' });
    expect(runnerEnv['MCP_CONFIRM_SECRET']).toBe(frontEnv['MCP_CONFIRM_SECRET']);
  });

  test('every variable is one the code reads, and docs/hosting.md lists it for the process that gets it', () => {
    for (const [process, vars] of [
      ['runner', { ...skills, ...runnerEnv }],
      ['front', { ...skills, ...frontEnv }],
    ] as const) {
      for (const variable of Object.keys(vars)) {
        expect(KNOWN, variable).toContain(variable);
        expect(documented(variable)?.[process], `docs/hosting.md: ${variable} for the ${process}`).toMatch(
          /^(required|optional|recommended|or )/,
        );
      }
    }
  });

  const analyze = spawnSync('sh', ['-c', 'command -v systemd-analyze'], { encoding: 'utf8' }).stdout.trim();
  test.skipIf(!analyze)(
    `systemd-analyze verify passes both units (with the built bin as /usr/bin/skill-mcp)${analyze ? '' : ' (skipped: no systemd-analyze here)'}`,
    () => {
      const tmp = tempDir('units');
      for (const name of ['skill-mcp-runner.service', 'skill-mcp-front.service']) {
        writeFileSync(join(tmp, name), readFileSync(join(dir, name), 'utf8').replaceAll('/usr/bin/skill-mcp', SERVER_JS));
      }
      // SYSTEMD_UNIT_PATH: the front's Requires= finds the runner's unit beside it.
      const result = spawnSync(
        analyze,
        ['verify', '--man=no', join(tmp, 'skill-mcp-runner.service'), join(tmp, 'skill-mcp-front.service')],
        { encoding: 'utf8', env: { ...process.env, SYSTEMD_UNIT_PATH: `${tmp}:` } },
      );
      expect(result.stderr).toBe('');
      expect(result.status).toBe(0);
    },
  );
});
