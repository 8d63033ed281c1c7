/**
 * @module Re-derivation (docs/architecture.md §8): for every prepare and every run the runner works out from
 * scratch what would run — it finds the skill by name again, re-reads its SKILL.md, re-resolves the
 * declaration (shared/declaration-source.ts: frontmatter, sidecar or operator, and an operator's
 * pin against the very bytes it hashes), re-applies the owner's grant, re-checks the script path as a string and after
 * resolution, opens it and checks it is a regular file, reads and hashes every served file of the
 * skill (at a run: as it copies them into the run's private folder) — and only then computes
 * `willRun`, whose `content` binds those bytes (docs/architecture.md §7). Nothing
 * the front sent is trusted beyond the skill name, script name and args it asked for.
 */
import { closeSync, constants, fstatSync, openSync } from 'node:fs';
import { relative } from 'node:path';
import { skillRoots } from '../../shared/config.js';
import type { Declaration, DeclaredScript } from '../../shared/declaration.js';
import { resolveDeclaration, type DeclarationOrigin } from '../../shared/declaration-source.js';
import { findSkillByName, rootLabel } from '../../shared/discover.js';
import { provenanceOf, readPullLock, type Provenance } from '../../shared/provenance.js';
import type { DiscoveredSkill } from '../../shared/discover.js';
import type { FolderListings } from '../../shared/folder-listing.js';
import type { SkillMdMemo, SkillMdParse } from './skill-md-memo.js';
import { buildScriptEnv, selfGrantWarning } from '../../shared/env.js';
import type { ErrorCode } from '../../shared/errors.js';
import { parseSkillMd, type ParsedSkillMd } from '../../shared/frontmatter.js';
import { readSkillMdFile } from '../../shared/skill-md.js';
import { grantScripts, notGrantedMessage, readGrantSource, type Caller } from '../../shared/grant.js';
import type { ScriptGrant } from '../../shared/grant.js';
import { readVisibility, visibleTo } from '../../shared/visibility.js';
import type { CatalogLimits } from '../../shared/limits.js';
import { declarationsDirOf } from '../../shared/settings.js';
import { checkPathString, isHiddenPath, resolveInside } from '../../shared/paths.js';
import type { DepsInfo, WillRun } from '../../shared/protocol.js';
import type { Requirements } from '../../shared/requirements.js';
import { MAX_RUN_CONTENT_BYTES, readSkillContent } from '../../shared/skill-content.js';
import type { ContentLimits, ContentResult } from '../../shared/skill-content.js';
import type { HashWorker } from '../../shared/hash-worker.js';
import type { RejectReason } from '../audit/log.js';
import { bridgeNode, egressSelfGrantWarning, planEgress } from '../egress/plan.js';
import { specialAddressWarning } from '../egress/address.js';
import type { EgressPlan } from '../egress/plan.js';
import type { Platform } from '../sandbox/platform.js';
import { usesBwrap } from '../sandbox/platform.js';
import { sandboxPwd } from '../sandbox/bwrap.js';
import { depsVariables, planDeps } from '../deps/run-env.js';
import type { DepsContext, RunDeps } from '../deps/run-env.js';
import type { RedactionValue, SecretBinding } from '../secrets/binding.js';
import { planSecrets, secretsSelfGrantWarning, shownSecrets } from '../secrets/plan.js';
import type { DeclaredSecret } from '../../shared/declaration-secrets.js';
import { caBundleEnv } from '../secrets/trust.js';
import { intersectEgressLists } from '../../shared/egress.js';
import { dataQuota, dataWho, type DataQuota } from '../../shared/data.js';
import type { DeclaredData } from '../../shared/declaration.js';

/** Stand-ins for the sandbox's private HOME/TMPDIR and the skill's folder, so previews name them as the run will. */
export const SANDBOX_PLACEHOLDERS = {
  HOME: '(private)',
  TMPDIR: '(private)',
  SKILL_DIR: '(the skill, read-only)',
} as const;

export interface DeriveContext {
  /** The runner's private copy of its environment (grant source and secret values). */
  env: Readonly<Record<string, string | undefined>>;
  bundledSkills: string;
  limits: CatalogLimits;
  platform: Platform;
  /** The runner's memory cap per run; a script's declared `memory` may only lower it. */
  memoryBytes: number;
  /** The runner's hashing thread (shared/hash-worker.ts): skill content is hashed off its event loop. */
  hasher?: HashWorker;
  /** Where environments live, and the runner's memory of what it verified (runner/deps/). */
  deps: DepsContext;
  /**
   * The skill roots' listings, read again only when a root changes (shared/folder-listing.ts), so
   * finding the skill costs a run the same at 30 skills as at 5,000. Absent: read per request.
   */
  listings?: FolderListings;
  /** Parses of SKILL.md texts already seen, by their sha256 (runner/requests/skill-md-memo.ts). Absent: parsed per request. */
  skillMd?: SkillMdMemo;
  /** Data folders (shared/data.ts): whether the host's `MCP_DATA_DIR` is the base, and the operator's quota. Absent: none. */
  data?: { hostBase: boolean; quota: DataQuota };
}

export interface RunPlan {
  willRun: WillRun;
  interpreterPath: string;
  /**
   * The folder the run uses (cwd, or /skill inside bubblewrap) — at a run the runner's private copy
   * of the skill (runner/workspace/run-copy.ts), else the skill's real directory — and the script's path in it.
   */
  realDir: string;
  scriptRelative: string;
  args: string[];
  /** Names of the granted variables (values are read from the private env at spawn time). */
  grantedEnv: string[];
  /** The run's destinations and what they become at this level (proxy, or why not). */
  egress: EgressPlan;
  /** The run's verified environments (bound read-only, runner/deps/run-env.ts). */
  deps: RunDeps;
  /** Which grant rule allowed the run (for its audit lines). */
  grantedBy?: ScriptGrant['grantedBy'];
  /** The run's secrets, resolved for its caller (runner/secrets/binding.ts): the proxy injects them. */
  secrets: SecretBinding[];
  /** Every value the run could see or reach, searched for in what it returns (runner/secrets/binding.ts). */
  redact: RedactionValue[];
  /** The run's data folder (runner/data/folder.ts): `[skill, who]` below the base, and its quota. */
  data?: { key: [string, string]; quota: DataQuota };
}

/** What is derived: a skill's script with its arguments, for a caller. */
export interface DeriveRequest {
  skill: string;
  script: string;
  args: string[];
  /** The skill already found (describe walks the catalog once), else it is found by name. */
  known?: DiscoveredSkill;
  /** Where the approved bytes come from; the skill in place by default. */
  content?: ContentSource;
  caller?: Caller;
}

/**
 * Where the approved bytes come from: prepare and describe read the skill in place; a run copies
 * it into a private folder (runner/workspace/run-copy.ts) and runs that copy, so what was hashed is what runs.
 */
export interface ContentSource {
  read(skill: DiscoveredSkill): Promise<ContentResult>;
  /** The folder the run uses instead of the skill's own (the private copy), when there is one. */
  runDir?: string;
}

/** Reads the skill's served files where they are (prepare, describe). */
export function contentInPlace(ctx: DeriveContext): ContentSource {
  return { read: (skill) => readSkillContent(skill.name, skill.realDir, contentLimits(ctx)) };
}

export function contentLimits(ctx: DeriveContext): ContentLimits {
  return {
    maxFiles: ctx.limits.maxFilesPerSkill,
    maxDirs: ctx.limits.maxDirsPerSkill,
    maxBytes: MAX_RUN_CONTENT_BYTES,
    ...(ctx.hasher ? { hasher: ctx.hasher } : {}),
  };
}

export type Derived =
  | { ok: true; plan: RunPlan }
  | { ok: false; code: ErrorCode; reason: RejectReason; message: string; deps?: DepsInfo[] };

function refuse(code: ErrorCode, reason: RejectReason, message: string): Derived {
  return { ok: false, code, reason, message };
}

/**
 * Where `skill-mcp pull` brought the skill from (shared/provenance.ts), judged on the very bytes
 * this run would copy: the pin only while they are the ones the lock records.
 */
function pulledFrom(
  ctx: DeriveContext,
  skill: DiscoveredSkill,
  files: readonly { path: string; sha256: string }[],
): Provenance | undefined {
  const root = skillRoots(ctx.env as NodeJS.ProcessEnv, ctx.bundledSkills)[skill.root];
  if (root === undefined || skill.displayPath !== `${rootLabel(root)}/${skill.name}`) return undefined;
  const lock = readPullLock(root);
  return lock ? provenanceOf(lock, skill.name, new Map(files.map((f) => [f.path, `sha256:${f.sha256}`] as const))) : undefined;
}

export async function findSkill(ctx: DeriveContext, name: string): Promise<DiscoveredSkill | undefined> {
  return findSkillByName(skillRoots(ctx.env as NodeJS.ProcessEnv, ctx.bundledSkills), name, ctx.limits.maxSkills, ctx.listings);
}

export interface DeclaredNow {
  scripts: DeclaredScript[];
  egress: string[];
  egressRules?: Declaration['egressRules'];
  /** The declaration's secrets (shared/declaration-secrets.ts); empty when none. */
  secrets: DeclaredSecret[];
  /** Variables the declaration's top-level `env` marks `secret: true` (legacy `env` secrets, issue 30). */
  secretEnv?: string[];
  problems: string[];
  /** Where the declaration came from (absent: none applies). */
  origin?: DeclarationOrigin;
  /** Packages its scripts import (shared/requirements.ts). */
  requirements?: Requirements;
  /** Its `data:` (shared/declaration.ts). */
  data?: DeclaredData;
}

/** One read of the skill's content per request: a pin is checked against the very bytes that are bound (and, at a run, copied). */
export function onceContent(content: ContentSource, skill: DiscoveredSkill): () => Promise<ContentResult> {
  let read: Promise<ContentResult> | undefined;
  return () => (read ??= content.read(skill));
}

/** The skill's declared scripts and egress, where they were declared, or why it has none runnable. */
export async function declaredScripts(
  ctx: DeriveContext,
  skill: DiscoveredSkill,
  read: () => Promise<ContentResult> = onceContent(contentInPlace(ctx), skill),
): Promise<DeclaredNow> {
  const md = readSkillMdFile(skill.realDir);
  if (!md.ok) return { scripts: [], egress: [], secrets: [], problems: [md.why] };
  let parsed: ParsedSkillMd | SkillMdParse;
  try {
    parsed = ctx.skillMd
      ? ctx.skillMd.parse(md.text, ctx.limits.maxFrontmatterBytes)
      : parseSkillMd(md.text, ctx.limits.maxFrontmatterBytes);
  } catch (error) {
    return { scripts: [], egress: [], secrets: [], problems: [`the frontmatter cannot be read: ${(error as Error).message}`] };
  }
  const resolved = await resolveDeclaration({
    name: skill.name,
    realDir: skill.realDir,
    frontmatter: parsed.frontmatter,
    declarationError: parsed.declarationError,
    declarationsDir: declarationsDirOf(ctx.env),
    contentDigest: async () => {
      const content = await read();
      return content.ok ? { ok: true, digest: content.content.digest } : { ok: false, why: content.why };
    },
  });
  const secretEnv = (resolved.declaration?.env ?? []).filter((e) => e.secret).map((e) => e.name);
  return {
    scripts: resolved.declaration?.run ?? [],
    egress: resolved.declaration?.egress ?? [],
    egressRules: resolved.declaration?.egressRules ?? [],
    secrets: resolved.declaration?.secrets ?? [],
    ...(secretEnv.length > 0 ? { secretEnv } : {}),
    problems: resolved.problems.map((p) => p.detail),
    ...(resolved.origin ? { origin: resolved.origin } : {}),
    ...(resolved.declaration?.requirements ? { requirements: resolved.declaration.requirements } : {}),
    ...(resolved.declaration?.data ? { data: resolved.declaration.data } : {}),
  };
}

/** Works out, from the disk and the owner's grant as they are now, what `skill/script args` would run. */
export async function deriveRun(ctx: DeriveContext, request: DeriveRequest): Promise<Derived> {
  const { skill: skillName, script, args, known: knownSkill, content = contentInPlace(ctx), caller } = request;
  const skill = knownSkill ?? (await findSkill(ctx, skillName));
  // Security: a skill this caller may not see is unknown to it here too, whatever the front sent.
  if (skill && !visibleTo(readVisibility(ctx.env as NodeJS.ProcessEnv), skill.name, caller))
    return refuse('UNKNOWN_SKILL', 'unknown-skill', `no skill named ${JSON.stringify(skillName)} is served; skill_list shows the names`);
  if (!skill)
    return refuse('UNKNOWN_SKILL', 'unknown-skill', `no skill named ${JSON.stringify(skillName)} is served; skill_list shows the names`);
  const readContent = onceContent(content, skill);
  const {
    scripts,
    egress: declaredEgress,
    egressRules: declaredRules = [],
    secrets: declaredSecrets,
    origin,
    problems,
    requirements,
    secretEnv,
    data: declaredData,
  } = await declaredScripts(ctx, skill, readContent);
  const declared = scripts.find((s) => s.script === script);
  // Security: only what the skill declares can run — never an arbitrary file of the bundle.
  if (!declared) {
    const why = scripts.length === 0 && problems.length > 0 ? ` (${problems.join('; ')})` : '';
    return refuse(
      'NOT_DECLARED',
      'not-declared',
      `skill ${JSON.stringify(skill.name)} does not declare a runnable script ${JSON.stringify(script)}${why}; skill_list shows its declared scripts`,
    );
  }
  const source = readGrantSource(ctx.env as NodeJS.ProcessEnv);
  const grant = grantScripts(
    skill.name,
    { version: 1, run: scripts, env: [], egress: declaredEgress, secrets: declaredSecrets },
    source,
    caller,
  ).find((g) => g.declared.script === script)!;
  // Security: declared ∩ granted (docs/architecture.md §6); the front's view of the grant is not trusted.
  if (!grant.granted)
    return refuse(
      'NOT_GRANTED',
      'not-granted',
      notGrantedMessage(source, skill.name, script, caller === 'any-caller' ? undefined : caller),
    );
  const interpreter = ctx.platform.interpreters.get(declared.interpreter);
  if (!interpreter || !('path' in interpreter)) {
    const why =
      interpreter && 'why' in interpreter
        ? interpreter.why
        : `"${declared.interpreter}" is not one of the supported interpreters (node, python3)`;
    return refuse('INTERPRETER_UNAVAILABLE', 'interpreter-unavailable', `${skill.name}/${script} cannot run here: ${why}`);
  }
  const check = checkPathString(script);
  if (!check.ok) return refuse('INVALID_PATH', 'invalid-path', `the script path is refused: ${check.why}`);
  if (isHiddenPath(check.segments)) return refuse('INVALID_PATH', 'invalid-path', 'hidden files are never served or run');
  const resolved = await resolveInside(skill.realDir, check.segments);
  // Security: a declared script swapped for a symlink leaving the skill is refused here.
  if (!resolved.ok)
    return refuse(resolved.code, resolved.code === 'NOT_FOUND' ? 'not-found' : 'outside-skill', `${skill.name}/${script}: ${resolved.why}`);
  let fd: number | undefined;
  try {
    fd = openSync(resolved.real, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    // Security: what was opened must be a regular file (not a FIFO or device planted in the skill).
    if (!fstatSync(fd).isFile()) return refuse('NOT_A_FILE', 'not-a-file', `${skill.name}/${script} is not a regular file`);
  } catch {
    return refuse('NOT_A_FILE', 'not-a-file', `${skill.name}/${script} cannot be opened as a regular file`);
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
  const read = await readContent();
  if (!read.ok) return refuse(read.code, read.code === 'TOO_LARGE' ? 'too-large' : 'content-unreadable', `${skill.name}: ${read.why}`);
  const served = check.segments.join('/');
  const scriptFile = read.content.files.find((f) => f.path === served);
  // Security: the script must be one of the files the approval binds (and the copy holds).
  if (!scriptFile) return refuse('NOT_FOUND', 'not-found', `${skill.name}/${script} is not a served file of the skill`);
  const egress = planEgress(ctx.platform.isolation, usesBwrap(ctx.platform), bridgeNode(ctx.platform) !== undefined, grant.egress);
  // The rules of the declared entries this run reaches; the helper applies each to the granted entries it covers.
  const rules = declaredRules.filter((set) => intersectEgressLists([set.entry], egress.entries).length > 0);
  if (rules.length > 0) egress.rules = rules;
  // Security: the environments are verified against their manifests now, for every preview and run.
  const deps = await planDeps(ctx.deps, interpreterPaths(ctx), skill.name, content.runDir ?? skill.realDir, requirements);
  if (!deps.ok) return { ok: false, code: 'DEPS_MISSING', reason: 'deps-missing', message: deps.why, deps: deps.infos };
  // Security: refused at a level without the run's own proxy, and SECRET_MISSING before any approval.
  const secretsPlan = planSecrets({
    env: ctx.env,
    caller,
    granted: grant.secrets,
    egress,
    isolation: ctx.platform.isolation,
    what: `${skill.name}/${script}`,
  });
  if (!secretsPlan.ok) return refuse(secretsPlan.code, secretsPlan.reason, secretsPlan.message);
  const quota = ctx.data && dataQuota(declaredData, ctx.data.hostBase, ctx.data.quota);
  // Security: one folder per skill and per subject; the host's own MCP_DATA_DIR (the base) never reaches a script.
  const data = quota && { key: [skill.name, dataWho(caller === 'any-caller' ? undefined : caller?.subject)] as [string, string], quota };
  // Inside bubblewrap PATH is the sandbox's own (buildSpawn): a placeholder keeps the names equal.
  const built = buildScriptEnv(ctx.env, grant.env, {
    ...egress.env,
    ...(usesBwrap(ctx.platform) ? { ...SANDBOX_PLACEHOLDERS, PATH: '(sandbox)' } : SANDBOX_PLACEHOLDERS),
    MCP_DATA_DIR: data ? '(data folder)' : null,
  });
  // Each bound secret's variable holds its placeholder (sandbox/spawn.ts), and a run whose secrets the proxy
  // injects trusts the run's CA bundle (runner/secrets/trust.ts; buildSpawn sets the same names). Keyed on
  // the grant, not the bindings: describe reads no value, so it has none.
  const bundleNames = Object.keys(
    caBundleEnv(usesBwrap(ctx.platform) && egress.mode === 'proxy' && grant.secrets.length + rules.length > 0),
  );
  // bubblewrap's PWD is named too (sandbox/bwrap.ts sandboxPwd): the person approves every variable the script gets.
  built.names = [
    ...new Set([
      ...built.names,
      ...Object.keys(depsVariables(deps.run, usesBwrap(ctx.platform))),
      ...grant.secrets.map((s) => s.name),
      ...bundleNames,
      ...Object.keys(sandboxPwd(usesBwrap(ctx.platform))),
    ]),
  ].sort();
  const willRun: WillRun = {
    skill: skill.name,
    interpreter: declared.interpreter,
    argv: [script, ...args],
    cwd: skill.displayPath,
    timeoutMs: declared.timeoutMs,
    envNames: built.names,
    isolation: ctx.platform.isolation,
    sandbox: ctx.platform.mechanisms,
    memoryBytes: Math.min(ctx.memoryBytes, declared.memoryBytes ?? ctx.memoryBytes),
    content: { script: scriptFile.sha256, files: read.content.digest, fileCount: read.content.files.length, bytes: read.content.bytes },
    // A script is declared only when a declaration applied, and so came from somewhere.
    declarationFrom: origin!.from,
  };
  if (origin!.pinned) willRun.declarationPinned = true;
  const provenance = pulledFrom(ctx, skill, read.content.files);
  if (provenance) willRun.provenance = provenance;
  if (built.notSet.length > 0) willRun.envNotSet = built.notSet;
  if (deps.infos.length > 0) willRun.deps = deps.infos;
  const warning = grant.selfGranted ? selfGrantWarning(built.passed) : undefined;
  if (warning !== undefined) willRun.envWarning = warning;
  if (egress.entries.length > 0) {
    willRun.egress = egress.entries;
    if (rules.length > 0) willRun.egressRules = rules;
    // Standalone takes the declaration as the grant: the person is told, as for variables.
    const selfGranted = source.kind === 'declaration' ? egressSelfGrantWarning(egress.entries) : undefined;
    // Loopback, private, link-local and metadata addresses are named as such, whoever granted them.
    const egressWarning = [selfGranted, specialAddressWarning(egress.entries)].filter((w) => w !== undefined).join(' ');
    if (egressWarning !== '') willRun.egressWarning = egressWarning;
    if (egress.note !== undefined) willRun.egressNote = egress.note;
  }
  if (grant.secrets.length > 0) {
    willRun.secrets = shownSecrets(grant.secrets);
    const warning = source.kind === 'declaration' ? secretsSelfGrantWarning(grant.secrets) : undefined;
    if (warning !== undefined) willRun.secretsWarning = warning;
  }
  if (grant.secretsNotBound.length > 0) willRun.secretsNotBound = grant.secretsNotBound;
  if (data) willRun.data = { folder: data.key.join('/'), ...data.quota };
  const secrets: SecretBinding[] = secretsPlan.bindings;
  // Legacy `env` secrets the script receives, and every bound secret's value (docs/secrets-redaction.md).
  const redact: RedactionValue[] = redactionValues(built.env, built.passed, secretEnv ?? [], secrets);
  return {
    ok: true,
    plan: {
      willRun,
      interpreterPath: interpreter.path,
      // A copy holds every served path as a regular file: the script runs under its declared path there.
      realDir: content.runDir ?? skill.realDir,
      scriptRelative: content.runDir !== undefined ? served : relative(skill.realDir, resolved.real),
      args,
      grantedEnv: grant.env,
      egress,
      grantedBy: grant.grantedBy,
      deps: deps.run,
      secrets,
      redact,
      ...(data ? { data } : {}),
    },
  };
}

/**
 * What redaction searches a run's returns for (runner/secrets/redact.ts): each legacy `env` secret
 * the script really receives (granted, set, and marked `secret: true` by the declaration), and each
 * bound secret's value — which never enters the sandbox, but its bound host could echo it back.
 */
export function redactionValues(
  env: Readonly<Record<string, string>>,
  passed: readonly string[],
  secretEnv: readonly string[],
  secrets: readonly SecretBinding[],
): RedactionValue[] {
  const marked = new Set(secretEnv);
  const legacy = passed.filter((name) => marked.has(name) && env[name] !== undefined).map((name) => ({ name, value: env[name]! }));
  return [...legacy, ...secrets.map((b) => ({ name: b.name, value: b.value }))];
}

/** The runner's resolved interpreters, for the environments' identities. */
function interpreterPaths(ctx: DeriveContext): { python3?: string; node?: string } {
  const path = (name: string): string | undefined => {
    const r = ctx.platform.interpreters.get(name);
    return r && 'path' in r ? r.path : undefined;
  };
  const python3 = path('python3');
  const node = path('node');
  return { ...(python3 ? { python3 } : {}), ...(node ? { node } : {}) };
}
