/**
 * @module The `mcp-host` declaration (docs/architecture.md §4): which scripts a skill says are entry points, with
 * which interpreter, and which variables each asks for. It only ever narrows — nothing in it is an
 * authorization (the skill's author, or the operator, wrote it). One schema, written in one of
 * three places (shared/declaration-source.ts decides which applies): the SKILL.md frontmatter's
 * `mcp-host:` block, a sidecar `mcp-host.yaml`, or an operator's file; this module parses the
 * fields, wherever they came from. Parsed strictly: an unknown MAJOR version or a malformed shape
 * rejects the whole declaration; unknown keys are ignored but named.
 */
import { formatEgressEntry, intersectEntries, MAX_EGRESS_ENTRIES, parseEgressEntry, parseEgressList } from './egress.js';
import { parseAllow, type EgressRuleSet } from './egress-rules.js';
import { parseSecrets, type DeclaredSecret } from './declaration-secrets.js';
import { checkPathString } from './paths.js';
import { DEFAULT_TIMEOUT_MS, MAX_TIMEOUT_MS } from './limits.js';
import { parseRequirements } from './requirements.js';
import type { Requirements } from './requirements.js';
import type { JsonValue } from './frontmatter.js';

/** The fixed interpreter set. The declaration names one; never inferred from extension or shebang. */
export const INTERPRETERS = ['node', 'python3'] as const;
export type Interpreter = (typeof INTERPRETERS)[number];

export interface DeclaredScript {
  /** Path inside the skill, as declared (passed the string path check). */
  script: string;
  /** As declared; may be outside {@link INTERPRETERS} (then the script is unavailable, with why). */
  interpreter: string;
  /** Variables this script asks for (names only). */
  env: string[];
  /** Wall-clock budget after the 300 s clamp. */
  timeoutMs: number;
  /** A memory cap the script asks for (bytes); it can only lower the runner's cap. */
  memoryBytes?: number;
}

export interface Declaration {
  version: number;
  run: DeclaredScript[];
  /** Variables proposed for the server's environment. */
  env: { name: string; secret: boolean }[];
  /**
   * Destinations the skill's scripts reach (shared/egress.ts), canonical and without duplicates.
   * A proposal: a run gets only what the grant also allows, through the runner's per-run proxy.
   */
  egress: string[];
  /** Request rules of the entries that carry `allow` (shared/egress-rules.ts); absent: none. */
  egressRules?: EgressRuleSet[];
  /** Packages the scripts import (shared/requirements.ts), installed by the operator ahead of time. */
  requirements?: Requirements;
  /**
   * Credentials the scripts use but never hold (shared/declaration-secrets.ts, docs/secrets.md):
   * each script gets a placeholder, the run's proxy adds the value for the declared hosts. Absent: none.
   */
  secrets?: DeclaredSecret[];
  /**
   * A data folder kept between runs (docs/isolation.md, "Data folders"): `{}` for `data: true` (the
   * operator's quota), else the quota the skill asks for. Absent: no data folder.
   */
  data?: DeclaredData;
}

/** A skill's data-folder quota as declared; a missing figure is the operator's default. */
export interface DeclaredData {
  bytes?: number;
  files?: number;
}

export interface DeclarationResult {
  declaration?: Declaration;
  /** Problems for a `declaration` entry; when `declaration` is absent the block was rejected. */
  problems: string[];
}

const SUPPORTED_MAJOR = 1;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;

/**
 * Variables that can never be granted to a script, whatever any declaration or grant says.
 * Security: loader and runtime variables turn "run this declared file" into "run anything";
 * our own configuration would let a script learn or steer the server.
 */
export function isNeverGrantable(name: string): boolean {
  if (/^(LD_|DYLD_)/.test(name)) return true;
  if (
    /^(NODE_OPTIONS|NODE_PATH|NODE_REPL_EXTERNAL_MODULE|NODE_EXTRA_CA_CERTS|NODE_V8_COVERAGE|NODE_USE_ENV_PROXY|NODE_TLS_REJECT_UNAUTHORIZED)$/.test(
      name,
    )
  )
    return true;
  if (/^PYTHON/.test(name)) return true;
  if (/^(BASH_ENV|ENV|SHELLOPTS|PS4|IFS|PATH|HOME|TMPDIR|LANG|TZ|PERL5LIB|PERL5OPT|RUBYOPT|RUBYLIB)$/.test(name)) return true;
  // Security: the working directory is the runner's to say (bubblewrap's PWD=/work, sandbox/bwrap.ts);
  // a granted PWD or OLDPWD would tell a script a host path, or a place it is not.
  if (name === 'PWD' || name === 'OLDPWD') return true;
  if (/^(SKILL_MCP_|MCP_)/.test(name) || name === 'SKILLS_DIR') return true;
  // Security: the trust of a run with secrets is the runner's (runner/secrets/trust.ts): a granted
  // value could point a client at another CA bundle, or stand where the run's bundle must be.
  if (/^(SSL_CERT_FILE|SSL_CERT_DIR|REQUESTS_CA_BUNDLE|PIP_CERT|CURL_CA_BUNDLE)$/.test(name)) return true;
  return false;
}

const RUN_KEYS = new Set(['script', 'interpreter', 'env', 'timeout', 'memory']);
const ENV_KEYS = new Set(['name', 'secret']);
const TOP_KEYS = new Set(['version', 'run', 'env', 'egress', 'requirements', 'secrets', 'data']);
const DATA_KEYS = new Set(['bytes', 'files']);

function isRecord(value: unknown): value is Record<string, JsonValue> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

class Rejected extends Error {}

const SIZE_UNITS: Record<string, number> = { '': 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3 };
/**
 * Smaller caps stop the interpreters themselves (measured on Node 20: under RLIMIT_DATA of 32 MiB
 * `node -e 0` hangs at start, at 48 MiB it runs; python3 starts at 24 MiB). 64 MiB leaves headroom.
 */
export const MIN_MEMORY_BYTES = 64 * 1024 * 1024;

/** `512M`, `1G`, `1.5GiB` or a whole number of bytes; null when malformed or below {@link MIN_MEMORY_BYTES}. */
export function parseByteSize(value: JsonValue): number | null {
  const bytes = typeof value === 'number' ? value : parseSize(value);
  return bytes !== null && Number.isSafeInteger(bytes) && bytes >= MIN_MEMORY_BYTES ? bytes : null;
}

/** `512M`, `1G`, `1.5GiB` or a whole number written as text; null when malformed. */
function parseSize(value: JsonValue): number | null {
  if (typeof value !== 'string') return null;
  const match = /^(\d+(?:\.\d+)?)\s*([kmg]?)(?:i?b)?$/i.exec(value.trim());
  return match ? Math.floor(Number(match[1]) * SIZE_UNITS[match[2]!.toLowerCase()]!) : null;
}

/** `data: true`, `false` or `{bytes, files}` (each a whole number or, for bytes, a size like `100M`). */
function parseData(value: JsonValue | undefined, at: string, unknown: string[]): DeclaredData | undefined {
  if (value === undefined || value === false) return undefined;
  if (value === true) return {};
  if (!isRecord(value)) throw new Rejected(`${at} must be true or a mapping with bytes and/or files`);
  for (const key of Object.keys(value)) if (!DATA_KEYS.has(key)) unknown.push(`${at}.${key}`);
  const { bytes, files } = value;
  const size = bytes === undefined ? undefined : typeof bytes === 'number' ? bytes : parseSize(bytes);
  if (size === null || (size !== undefined && !(Number.isSafeInteger(size) && size > 0)))
    throw new Rejected(`${at}.bytes must be a size like 100M or a number of bytes`);
  if (files !== undefined && !(typeof files === 'number' && Number.isSafeInteger(files) && files > 0))
    throw new Rejected(`${at}.files must be a whole number of entries`);
  return { ...(size !== undefined ? { bytes: size } : {}), ...(files !== undefined ? { files: files as number } : {}) };
}

/** Where a declaration was written, for its messages (shared/declaration-source.ts). */
export interface DeclarationLabels {
  /** Put before every key named: `mcp-host.` for the frontmatter block (the default), `` for a file holding the fields at top level. */
  keyPrefix?: string;
  /** What a rejection names: `mcp-host block` (the default), `mcp-host.yaml`, an operator declaration. */
  what?: string;
}

/** Parses the block's JSON value (from the strictly parsed frontmatter, or a declaration file). */
export function parseDeclaration(block: JsonValue | undefined, options: DeclarationLabels = {}): DeclarationResult {
  if (block === undefined || block === null) return { problems: [] };
  const p = options.keyPrefix ?? 'mcp-host.';
  const unknown: string[] = [];
  try {
    if (!isRecord(block)) throw new Rejected(`${options.what ?? 'mcp-host'} must be a mapping`);
    for (const key of Object.keys(block)) if (!TOP_KEYS.has(key)) unknown.push(`${p}${key}`);
    const version = block['version'];
    const major = typeof version === 'number' ? Math.floor(version) : typeof version === 'string' ? Number.parseInt(version, 10) : NaN;
    if (version === undefined) throw new Rejected(`${p}version is required (version: 1)`);
    if (major !== SUPPORTED_MAJOR)
      throw new Rejected(`${p}version ${JSON.stringify(version)} is not supported (this server reads major version ${SUPPORTED_MAJOR})`);

    const run = block['run'] ?? [];
    if (!Array.isArray(run)) throw new Rejected(`${p}run must be a list`);
    const scripts: DeclaredScript[] = [];
    const seen = new Set<string>();
    const dropped: string[] = [];
    run.forEach((row, i) => {
      const at = `${p}run[${i}]`;
      if (!isRecord(row)) throw new Rejected(`${at} must be a mapping`);
      for (const key of Object.keys(row)) if (!RUN_KEYS.has(key)) unknown.push(`${at}.${key}`);
      const script = row['script'];
      if (typeof script !== 'string') throw new Rejected(`${at}.script must be a string`);
      const check = checkPathString(script);
      if (!check.ok) throw new Rejected(`${at}.script ${JSON.stringify(script)}: ${check.why}`);
      // Security: an interpreter reads a leading "-" as its own option (`python3 -c`, `node --inspect=`):
      // a script "named" like that would run its arguments as code. Runs also pass a path that cannot
      // start with "-"; this refusal says so to the author instead of failing at run time.
      if (check.segments.some((segment) => segment.startsWith('-')))
        throw new Rejected(
          `${at}.script ${JSON.stringify(script)}: a path segment starts with "-" and would read as an interpreter option`,
        );
      if (seen.has(script)) throw new Rejected(`${at}.script ${JSON.stringify(script)} is declared twice`);
      seen.add(script);
      const interpreter = row['interpreter'];
      if (typeof interpreter !== 'string' || interpreter === '')
        throw new Rejected(`${at}.interpreter must name one of: ${INTERPRETERS.join(', ')}`);
      const env = row['env'] ?? [];
      if (!Array.isArray(env) || !env.every((n): n is string => typeof n === 'string' && ENV_NAME.test(n))) {
        throw new Rejected(`${at}.env must be a list of variable names`);
      }
      const kept = env.filter((name) => {
        if (!isNeverGrantable(name)) return true;
        dropped.push(`${at}.env ${name}`);
        return false;
      });
      const timeout = row['timeout'];
      let timeoutMs = DEFAULT_TIMEOUT_MS;
      if (timeout !== undefined) {
        if (typeof timeout !== 'number' || !(timeout > 0)) throw new Rejected(`${at}.timeout must be a positive number of seconds`);
        timeoutMs = Math.min(Math.round(timeout * 1000), MAX_TIMEOUT_MS);
      }
      const memory = row['memory'];
      const memoryBytes = memory === undefined ? undefined : parseByteSize(memory);
      if (memoryBytes === null) throw new Rejected(`${at}.memory must be a size like 256M, 1G or a number of bytes (at least 64M)`);
      scripts.push({ script, interpreter, env: [...new Set(kept)], timeoutMs, ...(memoryBytes !== undefined ? { memoryBytes } : {}) });
    });

    const envBlock = block['env'] ?? [];
    if (!Array.isArray(envBlock)) throw new Rejected(`${p}env must be a list`);
    const envProposals = envBlock.map((row, i) => {
      const at = `${p}env[${i}]`;
      if (!isRecord(row)) throw new Rejected(`${at} must be a mapping with a name`);
      for (const key of Object.keys(row)) if (!ENV_KEYS.has(key)) unknown.push(`${at}.${key}`);
      const name = row['name'];
      if (typeof name !== 'string' || !ENV_NAME.test(name)) throw new Rejected(`${at}.name must be a variable name`);
      const secret = row['secret'] ?? false;
      if (typeof secret !== 'boolean') throw new Rejected(`${at}.secret must be true or false`);
      return { name, secret };
    });

    const egressBlock = block['egress'] ?? [];
    if (!Array.isArray(egressBlock)) throw new Rejected(`${p}egress must be a list of destinations (host, host:port or *.domain)`);
    if (egressBlock.length > MAX_EGRESS_ENTRIES)
      throw new Rejected(`${p}egress lists ${egressBlock.length} destinations; at most ${MAX_EGRESS_ENTRIES}`);
    const egress: string[] = [];
    const egressRules: EgressRuleSet[] = [];
    egressBlock.forEach((entry, i) => {
      // Security: an entry the proxy could read more widely than a person reads it (a bare "*", a
      // URL, an address spelled as a number) costs the skill its scripts rather than guessing.
      const at = `${p}egress[${i}]`;
      const { host, allow, ...rest } = isRecord(entry) ? entry : { host: entry };
      if (typeof host !== 'string' || Object.keys(rest).length > 0)
        throw new Rejected(`${at} must be a string (host, host:port or *.domain) or { host, allow }`);
      const parsed = parseEgressEntry(host);
      if (!parsed.ok) throw new Rejected(`${at} ${parsed.why}`);
      const text = formatEgressEntry(parsed.value);
      const rules = isRecord(entry) ? parseAllow(allow, `${at}.allow`) : undefined;
      if (rules?.ok === false) throw new Rejected(rules.why);
      // Security: a host with rules also reached through another entry would escape them, so no entry overlaps one with rules.
      const clash = egress.find(
        (e) => (rules || egressRules.some((r) => r.entry === e)) && intersectEntries(parsed.value, parseEgressList([e])[0]!),
      );
      if (clash !== undefined)
        throw new Rejected(
          `${at}: ${text} and ${clash} overlap and one has request rules, which the other would escape; list such a host once`,
        );
      if (rules?.ok) egressRules.push({ entry: text, allow: rules.rules });
      if (!egress.includes(text)) egress.push(text);
    });

    const requirements = parseRequirements(block['requirements']);
    unknown.push(...requirements.unknown);
    if (!requirements.ok) throw new Rejected(requirements.why);

    // Security: a secret's name may be no plain variable of the skill (declared or asked for by a
    // script, dropped or not): the legacy path would hand that name's real value to the script.
    const taken = new Set([
      ...envProposals.map((e) => e.name),
      ...run.flatMap((row) =>
        isRecord(row) && Array.isArray(row['env']) ? row['env'].filter((n): n is string => typeof n === 'string') : [],
      ),
    ]);
    const secrets = parseSecrets(block['secrets'], `${p}secrets`, egress, taken, isNeverGrantable);
    unknown.push(...secrets.unknown);
    if (!secrets.ok) throw new Rejected(secrets.why);

    const data = parseData(block['data'], `${p}data`, unknown);

    const problems: string[] = [];
    if (unknown.length > 0) problems.push(`unknown keys ignored: ${unknown.join(', ')}`);
    if (dropped.length > 0) problems.push(`variables that can never be granted were dropped: ${dropped.join(', ')}`);
    return {
      declaration: {
        version: typeof version === 'number' ? version : major,
        run: scripts,
        env: envProposals,
        egress,
        ...(egressRules.length > 0 ? { egressRules } : {}),
        ...(requirements.value ? { requirements: requirements.value } : {}),
        ...(secrets.secrets.length > 0 ? { secrets: secrets.secrets } : {}),
        ...(data !== undefined ? { data } : {}),
      },
      problems,
    };
  } catch (error) {
    if (!(error instanceof Rejected)) throw error;
    const problems = [
      `the ${options.what ?? 'mcp-host block'} was rejected: ${error.message}; the skill's scripts are not runnable, its instructions are still served`,
    ];
    if (unknown.length > 0) problems.push(`unknown keys: ${unknown.join(', ')}`);
    return { problems };
  }
}
