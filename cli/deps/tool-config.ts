/**
 * @module The index an install really uses, and how it is carried into the sandbox. With the
 * operator's explicit settings (runner/deps/index-settings.ts) pip and npm are told exactly those
 * and read no configuration of their own. Without them, the installing user's own configuration
 * is taken as that user has it — `pip config list` (every config file pip reads) plus the `PIP_*`
 * variables, `npm config get registry` plus the `npm_config_*` variables and the user's .npmrc —
 * and handed to the sandboxed tool as a generated config file and the same variables. Either way
 * the install prints which index it used; an empty one is never assumed.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { linkedFolders } from './index-links.js';
import type { ExplicitIndex } from '../../runner/deps/index-settings.js';
import { redactUrl } from '../../runner/deps/index-settings.js';

type Env = Readonly<Record<string, string | undefined>>;

export const PYPI_INDEX = 'https://pypi.org/simple';
/** PyPI's index pages link to files on this host. */
const PYPI_FILES = 'files.pythonhosted.org:443';

export interface ToolConfig {
  /** Arguments for the tool (`--index-url …`, `--registry …`). */
  args: string[];
  /** Variables for the sandboxed tool (the user's PIP_* / npm_config_*, or those that switch config files off). */
  env: Record<string, string>;
  /** A config file to write into the install's work folder (`name` there), pointed to by `env`. */
  file?: { name: string; text: string; variable: string };
  /** What the install output says: where packages come from (credentials redacted). */
  describe: string[];
  /** host:port destinations the install must reach; empty: no network at all. */
  hosts: string[];
  /** Local folders and files the configuration names (file:// indexes, find-links, certificates), and the folders local indexes link to: bound read-only. */
  paths: string[];
  /** Where each of `paths` comes from (a variable, pip's configuration, an index's links), for messages. */
  pathFrom: Record<string, string>;
}

/**
 * The folders outside each local index its pages link to (cli/deps/index-links.ts): bound too,
 * or the install stops here with why. `from` names the setting each index came from.
 */
function indexLinks(indexes: readonly { url: string; from: string }[]): { folders: Record<string, string>; describe: string[] } {
  const folders: Record<string, string> = {};
  const describe: string[] = [];
  for (const { url, from } of indexes) {
    const dir = localPath(url);
    if (dir === undefined || !existsSync(dir)) continue;
    const found = linkedFolders(resolve(dir), from);
    if (!found.ok) throw new Error(found.why);
    for (const folder of found.folders) folders[folder] ??= `linked from the pages of ${from}`;
    if (found.folders.length > 0)
      describe.push(`the pages of ${redactUrl(url)} link to ${found.folders.join(', ')} (bound read-only as well)`);
  }
  return { folders, describe };
}

function hostOf(value: string): string | undefined {
  try {
    const url = new URL(value);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') return undefined;
    const port = url.port !== '' ? Number(url.port) : url.protocol === 'https:' ? 443 : 80;
    return `${url.hostname}:${port}`;
  } catch {
    return undefined;
  }
}

function localPath(value: string): string | undefined {
  if (isAbsolute(value)) return value;
  try {
    const url = new URL(value);
    return url.protocol === 'file:' ? decodeURIComponent(url.pathname) : undefined;
  } catch {
    return undefined;
  }
}

/** Every http(s) host and local path named in `values` (space-separated lists included). */
function reach(values: string[]): { hosts: string[]; paths: string[] } {
  const hosts = new Set<string>();
  const paths = new Set<string>();
  for (const token of values.flatMap((v) => v.split(/\s+/)).filter(Boolean)) {
    const host = hostOf(token);
    if (host) hosts.add(host);
    const path = localPath(token);
    if (path) paths.add(path);
  }
  if ([...hosts].some((h) => h === 'pypi.org:443')) hosts.add(PYPI_FILES);
  return { hosts: [...hosts].sort(), paths: [...paths].sort() };
}

/** `pip config list` as the installing user: `section.key='value'` lines (the `:env:` ones are its variables). */
function pipConfigList(python: string, env: Env): { key: string; value: string }[] {
  const out = spawnSync(python, ['-m', 'pip', 'config', 'list'], { encoding: 'utf8', env: env as NodeJS.ProcessEnv, timeout: 60_000 });
  if (out.status !== 0)
    throw new Error(
      `pip config list failed (${out.error?.message ?? (out.stderr ?? '').trim().split('\n').pop() ?? `exit ${out.status}`}); is pip installed for ${python}?`,
    );
  const rows: { key: string; value: string }[] = [];
  for (const line of out.stdout.split('\n')) {
    const match = /^([^=\s]+)=(['"])(.*)\2$/.exec(line.trim());
    if (match) rows.push({ key: match[1]!, value: match[3]! });
  }
  return rows;
}

/** How pip is pointed at its index inside the sandbox. */
export function pipConfig(python: string, explicit: ExplicitIndex, env: Env): ToolConfig {
  if (explicit.pip) {
    const { indexUrl, findLinks } = explicit.pip;
    const args = [...(indexUrl !== '' ? ['--index-url', indexUrl] : ['--no-index']), ...findLinks.flatMap((l) => ['--find-links', l])];
    // Security: /dev/null switches off every pip config file, so nothing but the operator's setting decides the index.
    const linked = indexLinks(indexUrl !== '' ? [{ url: indexUrl, from: 'SKILL_MCP_PIP_INDEX_URL' }] : []);
    const describe = [
      indexUrl !== '' ? `index ${redactUrl(indexUrl)} (SKILL_MCP_PIP_INDEX_URL)` : 'no index (SKILL_MCP_PIP_INDEX_URL unset)',
      ...findLinks.map((l) => `find-links ${redactUrl(l)} (SKILL_MCP_PIP_FIND_LINKS)`),
      ...linked.describe,
    ];
    const named = reach([indexUrl, ...findLinks]);
    const pathFrom: Record<string, string> = {
      ...Object.fromEntries(reach([indexUrl]).paths.map((p) => [p, 'SKILL_MCP_PIP_INDEX_URL'])),
      ...Object.fromEntries(reach(findLinks).paths.map((p) => [p, 'SKILL_MCP_PIP_FIND_LINKS'])),
      ...linked.folders,
    };
    return {
      args,
      env: { PIP_CONFIG_FILE: '/dev/null' },
      describe,
      hosts: named.hosts,
      paths: [...new Set([...named.paths, ...Object.keys(linked.folders)])].sort(),
      pathFrom,
    };
  }
  const rows = pipConfigList(python, env);
  const vars = Object.fromEntries(
    Object.entries(env).filter((e): e is [string, string] => /^PIP_/.test(e[0]) && e[0] !== 'PIP_CONFIG_FILE' && e[1] !== undefined),
  );
  const sections = new Map<string, string[]>();
  for (const { key, value } of rows) {
    if (key.startsWith(':env:.')) continue;
    const dot = key.indexOf('.');
    const section = key.slice(0, dot);
    sections.set(section, [...(sections.get(section) ?? []), `${key.slice(dot + 1)} = ${value}`]);
  }
  const text = [...sections].map(([section, lines]) => `[${section}]\n${lines.join('\n')}\n`).join('\n');
  const setting = (name: string): string | undefined =>
    vars[`PIP_${name.toUpperCase().replace(/-/g, '_')}`] ??
    rows.find((r) => r.key === `install.${name}` || r.key === `global.${name}`)?.value;
  const noIndex = /^(1|true|yes|on)$/i.test(setting('no-index') ?? '');
  const index = noIndex ? undefined : (setting('index-url') ?? PYPI_INDEX);
  const extra = noIndex ? [] : (setting('extra-index-url') ?? '').split(/\s+/).filter(Boolean);
  const links = (setting('find-links') ?? '').split(/\s+/).filter(Boolean);
  const describe = [
    `${index ? `index ${redactUrl(index)}${setting('index-url') ? '' : ", pip's default"}` : 'no index (pip no-index)'} (from the installing user's pip configuration: SKILL_MCP_PIP_INDEX_URL is unset)`,
    ...extra.map((u) => `extra index ${redactUrl(u)}`),
    ...links.map((l) => `find-links ${redactUrl(l)}`),
  ];
  const named = reach([...(index ? [index] : []), ...extra, ...links]);
  // Files the configuration names (a constraints file, a certificate) must be readable inside too.
  const files = reach([...rows.map((r) => r.value), ...Object.values(vars)]).paths;
  const mine = "the installing user's pip configuration";
  const linked = indexLinks([...(index ? [index] : []), ...extra].map((url) => ({ url, from: `${mine} (${redactUrl(url)})` })));
  describe.push(...linked.describe);
  const paths = [...new Set([...named.paths, ...files])].filter((p) => existsSync(p));
  return {
    args: [],
    env: vars,
    file: { name: 'pip.conf', text, variable: 'PIP_CONFIG_FILE' },
    describe,
    hosts: named.hosts,
    paths: [...new Set([...paths, ...Object.keys(linked.folders)])].sort(),
    pathFrom: { ...Object.fromEntries(paths.map((p) => [p, mine])), ...linked.folders },
  };
}

/** How npm is pointed at its registry inside the sandbox. */
export function npmConfig(node: string, npmCli: string, explicit: ExplicitIndex, env: Env): ToolConfig {
  if (explicit.npm) {
    const { registry } = explicit.npm;
    return {
      args: ['--registry', registry],
      // Security: an empty user npmrc (and an empty global one, install.ts): only the operator's registry.
      env: {},
      file: { name: 'npmrc', text: '', variable: 'npm_config_userconfig' },
      describe: [`registry ${redactUrl(registry)} (SKILL_MCP_NPM_REGISTRY)`],
      ...reach([registry]),
      pathFrom: Object.fromEntries(reach([registry]).paths.map((p) => [p, 'SKILL_MCP_NPM_REGISTRY'])),
    };
  }
  const ask = (key: string): string => {
    const out = spawnSync(node, [npmCli, 'config', 'get', key], { encoding: 'utf8', env: env as NodeJS.ProcessEnv, timeout: 60_000 });
    if (out.status !== 0) throw new Error(`npm config get ${key} failed (${out.error?.message ?? `exit ${out.status}`})`);
    return out.stdout.trim();
  };
  const registry = ask('registry');
  if (registry === '' || registry === 'undefined')
    throw new Error('npm has no registry configured for the installing user; set SKILL_MCP_NPM_REGISTRY');
  const userconfig = ask('userconfig');
  const vars = Object.fromEntries(
    Object.entries(env).filter(
      (e): e is [string, string] =>
        /^npm_config_/i.test(e[0]) && !/^npm_config_(userconfig|globalconfig|cache|prefix)$/i.test(e[0]) && e[1] !== undefined,
    ),
  );
  let text: string | undefined;
  try {
    text = existsSync(userconfig) ? readFileSync(userconfig, 'utf8') : undefined;
  } catch {
    text = undefined;
  }
  return {
    args: ['--registry', registry],
    env: vars,
    file: { name: 'npmrc', text: text ?? '', variable: 'npm_config_userconfig' },
    describe: [`registry ${redactUrl(registry)} (from the installing user's npm configuration: SKILL_MCP_NPM_REGISTRY is unset)`],
    ...reach([registry]),
    pathFrom: Object.fromEntries(reach([registry]).paths.map((p) => [p, "the installing user's npm configuration"])),
  };
}
