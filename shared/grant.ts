/**
 * @module Who may run what (docs/architecture.md §6): what the skill declares ∩ what the owner grants.
 * `MCP_SKILL_RUN` (the owner's grant) only narrows; hosted mode without it grants nothing;
 * standalone without it takes the skill's own declaration (and the preview warns about the
 * variables that brings). Pure: the front uses it to list, the runner to re-check every run.
 */
import type { Declaration, DeclaredScript } from './declaration.js';
import { isNeverGrantable } from './declaration.js';
import { z } from 'zod';
import type { DeclaredSecret } from './declaration-secrets.js';
import { entryCovers, formatEgressEntry, intersectEgressLists, parseEgressEntry, parseEgressList } from './egress.js';
import { isHosted } from './mode.js';
import type { Identity } from './protocol.js';

export interface GrantRow {
  skill: string;
  script: string;
  env: string[];
  /** Destinations granted to this script (canonical egress entries); none when the row has no `egress`. */
  egress: string[];
  /**
   * Declared secrets granted to this script (docs/secrets.md, "Granting"): by name, optionally
   * narrowed to some of their hosts (canonical entries; absent: the declared hosts). None when the
   * row has no `secrets`.
   */
  secrets?: { name: string; hosts?: string[] }[];
  /** Its place in the MCP_SKILL_RUN array (0-based), so an audit line can say which row allowed a run. */
  index?: number;
  /** Who the row is for: exact `sub` values or `group:<g>`; absent: every caller. */
  subjects?: string[];
}

export type GrantSource = { kind: 'owner'; rows: GrantRow[]; error?: string } | { kind: 'hosted-default' } | { kind: 'declaration' };

/** `grantFrom` as `skill_list` reports it. */
export function grantFrom(source: GrantSource): 'MCP_SKILL_RUN' | 'none (hosted default)' | 'skill declarations (standalone)' {
  if (source.kind === 'owner') return 'MCP_SKILL_RUN';
  if (source.kind === 'hosted-default') return 'none (hosted default)';
  return 'skill declarations (standalone)';
}

const GrantRowSchema = z.object({
  skill: z.string(),
  script: z.string(),
  env: z.array(z.string()).default([]),
  egress: z.array(z.string()).default([]),
  secrets: z
    .array(z.strictObject({ name: z.string().min(1).max(128), hosts: z.array(z.string()).min(1).max(64).optional() }))
    .max(64)
    .default([]),
  // Security: an empty list is refused rather than read as "everyone" (or silently as "no one").
  subjects: z.array(z.string().min(1).max(262)).min(1).max(1000).optional(),
});

/** What a grant is asked for with when no one caller is meant: the runner's describe ("granted to someone"). */
export const ANY_CALLER = 'any-caller';
/** The caller a grant is evaluated for: a verified identity, none (stdio, static token), or ANY_CALLER. */
export type Caller = Identity | undefined | typeof ANY_CALLER;

/**
 * Whether a grant row is for this caller. Security: a row naming subjects grants only to a verified
 * OAuth identity whose `sub` is listed, or one of whose groups is listed as `group:<g>`; a caller
 * without an identity (stdio, the static HTTP token) matches only rows that name no subjects.
 */
export function rowApplies(row: GrantRow, identity: Caller): boolean {
  if (row.subjects === undefined || identity === ANY_CALLER) return true;
  if (identity === undefined) return false;
  return row.subjects.includes(identity.subject) || (identity.groups ?? []).some((group) => row.subjects!.includes(`group:${group}`));
}

/**
 * Reads the grant from the environment, the same way in both processes. Security: a malformed
 * MCP_SKILL_RUN fails closed — it (or its bad rows) grants nothing, and `error` says why, for the
 * start-up log, `skill_list` and every NOT_GRANTED it causes.
 */
export function readGrantSource(env: Readonly<Record<string, string | undefined>>): GrantSource {
  const raw = env['MCP_SKILL_RUN'];
  if (raw === undefined || raw === '') return isHosted(env) ? { kind: 'hosted-default' } : { kind: 'declaration' };
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    return { kind: 'owner', rows: [], error: 'MCP_SKILL_RUN is not valid JSON; it grants nothing' };
  }
  if (!Array.isArray(value))
    return { kind: 'owner', rows: [], error: 'MCP_SKILL_RUN must be a JSON array of {skill, script, env?, egress?}; it grants nothing' };
  const rows: GrantRow[] = [];
  const bad: number[] = [];
  value.forEach((row: unknown, i) => {
    const parsed = GrantRowSchema.safeParse(row);
    // Security: an egress entry the owner wrote is read as strictly as a declared one; a row
    // holding one that does not parse grants nothing at all rather than a guess.
    const entries = parsed.success ? parsed.data.egress.map(parseEgressEntry) : [];
    const canonical = entries.flatMap((e) => (e.ok ? [formatEgressEntry(e.value)] : []));
    // The same for a secret's hosts: one that does not parse costs the row, never widens it.
    const secrets = parsed.success
      ? parsed.data.secrets.map((s) => ({ name: s.name, hosts: s.hosts === undefined ? undefined : canonicalEntries(s.hosts) }))
      : [];
    const secretsRead = secrets.every((s) => s.hosts !== null);
    if (parsed.success && canonical.length === entries.length && secretsRead) {
      const { subjects, ...rest } = parsed.data;
      const rowSecrets = secrets.map((s) => ({ name: s.name, ...(s.hosts ? { hosts: s.hosts } : {}) }));
      rows.push({
        ...rest,
        egress: [...new Set(canonical)],
        secrets: rowSecrets,
        index: i,
        ...(subjects ? { subjects: [...new Set(subjects)] } : {}),
      });
    } else bad.push(i);
  });
  const error =
    bad.length > 0
      ? `MCP_SKILL_RUN rows ${bad.join(', ')} are not {skill, script, env?, egress?, secrets?, subjects?} (egress and a secret's hosts: host, host:port or *.domain; secrets: [{name, hosts?}]; subjects: a non-empty list of sub values or group:<g>); they grant nothing`
      : undefined;
  return error ? { kind: 'owner', rows, error } : { kind: 'owner', rows };
}

/** Canonical entries (sorted, without duplicates), or null when any does not parse. */
function canonicalEntries(list: readonly string[]): string[] | null {
  const out = new Set<string>();
  for (const text of list) {
    const parsed = parseEgressEntry(text);
    if (!parsed.ok) return null;
    out.add(formatEgressEntry(parsed.value));
  }
  return [...out].sort();
}

/**
 * Why a declared script is not granted, for the model: the same text from the front and the
 * runner. A grant that failed to parse says so, instead of implying the owner left the script out.
 */
export function notGrantedMessage(source: GrantSource, skill: string, script: string, identity?: Identity): string {
  if (source.kind === 'owner' && source.rows.some((r) => r.skill === skill && r.script === script)) {
    const who = identity
      ? `subject ${JSON.stringify(identity.subject)}${identity.groups?.length ? ` (groups: ${identity.groups.join(', ')})` : ''}`
      : 'a caller without an OAuth identity';
    return `"${skill}/${script}" is granted, but not to ${who}: the MCP_SKILL_RUN rows for it name other subjects. The owner must add your subject (or a group:<g> of yours) to a row's subjects.`;
  }
  const row = `{"skill":"${skill}","script":"${script}"}`;
  const how =
    source.kind === 'hosted-default'
      ? `Hosted mode grants nothing by default; the owner must list it in MCP_SKILL_RUN as ${row}.`
      : source.kind === 'owner' && source.error
        ? `The owner's MCP_SKILL_RUN could not be read (${source.error}); the owner must fix it, with ${row} among its rows, and restart.`
        : `MCP_SKILL_RUN does not grant it; the owner must add ${row}.`;
  return `"${skill}/${script}" is declared but not granted. ${how}`;
}

export interface ScriptGrant {
  declared: DeclaredScript;
  granted: boolean;
  /** Variables this script will be given (names), sorted. */
  env: string[];
  /** Standalone self-grant: the declared variables a third-party script gets without an owner grant. */
  selfGranted: boolean;
  /** Destinations this script may reach (canonical entries, sorted): declared ∩ granted. */
  egress: string[];
  /** Secrets bound for this script (docs/secrets.md): their hosts declared ∩ granted ∩ `egress`, never empty; sorted by name. */
  secrets: DeclaredSecret[];
  /** Declared secrets this script does not get, and why (not granted, or no host left): the preview says so. */
  secretsNotBound: { name: string; why: string }[];
  /** What allowed it: the MCP_SKILL_RUN rows that match (their 0-based indexes), or the declaration itself (standalone). */
  grantedBy?: { from: 'MCP_SKILL_RUN'; rows: number[] } | { from: 'declaration' };
}

/**
 * The granted entries the declaration covers. Security: only narrows — a grant entry outside the
 * declaration is dropped (deadGrantRows names it), and a declared one the grant does not cover is
 * not reached.
 */
export function grantedEgress(declared: readonly string[], granted: readonly string[]): string[] {
  const wider = parseEgressList(declared);
  return parseEgressList(granted)
    .filter((entry) => wider.some((d) => entryCovers(d, entry)))
    .map(formatEgressEntry)
    .sort();
}

/**
 * The script's secrets: each declared one whose hosts, narrowed by the rows that name it (none in
 * `rows`: the declaration is the grant) and by the script's granted `egress`, are not empty.
 * Security: only ever an intersection — a row naming hosts the declaration does not cover, or a
 * secret it does not declare, binds nothing more (deadGrantRows names it).
 */
export function grantedSecrets(
  declared: readonly DeclaredSecret[],
  egress: readonly string[],
  rows: readonly GrantRow[] | undefined,
): Pick<ScriptGrant, 'secrets' | 'secretsNotBound'> {
  const secrets: DeclaredSecret[] = [];
  const secretsNotBound: { name: string; why: string }[] = [];
  for (const secret of declared) {
    let hosts = secret.hosts;
    if (rows !== undefined) {
      const named = rows.flatMap((row) => (row.secrets ?? []).filter((s) => s.name === secret.name));
      if (named.length === 0) {
        secretsNotBound.push({ name: secret.name, why: 'not granted: no MCP_SKILL_RUN row for this script names it in secrets' });
        continue;
      }
      hosts = [...new Set(named.flatMap((s) => intersectEgressLists(secret.hosts, s.hosts ?? secret.hosts)))].sort();
    }
    const bound = intersectEgressLists(hosts, egress);
    if (bound.length === 0)
      secretsNotBound.push({
        name: secret.name,
        why: `none of its hosts (${secret.hosts.join(', ')}) is both granted for it and granted as this script's egress`,
      });
    else secrets.push({ ...secret, hosts: bound });
  }
  return { secrets, secretsNotBound };
}

/** The effective grant for each script the skill declares. */
export function grantScripts(skill: string, declaration: Declaration | undefined, source: GrantSource, identity?: Caller): ScriptGrant[] {
  if (!declaration) return [];
  const none = { secrets: [], secretsNotBound: [] };
  return declaration.run.map((declared) => {
    if (source.kind === 'hosted-default') return { declared, granted: false, env: [], selfGranted: false, egress: [], ...none };
    if (source.kind === 'declaration') {
      const egress = [...declaration.egress].sort();
      return {
        declared,
        granted: true,
        env: [...declared.env].sort(),
        selfGranted: declared.env.length > 0,
        egress,
        ...grantedSecrets(declaration.secrets ?? [], egress, undefined),
        grantedBy: { from: 'declaration' },
      };
    }
    const rows = source.rows.filter((row) => row.skill === skill && row.script === declared.script && rowApplies(row, identity));
    if (rows.length === 0) return { declared, granted: false, env: [], selfGranted: false, egress: [], ...none };
    // A granted variable must also be asked for by the script; never a variable nobody may grant.
    const asked = new Set(declared.env);
    const env = [...new Set(rows.flatMap((row) => row.env))].filter((name) => asked.has(name) && !isNeverGrantable(name));
    const grantedBy = { from: 'MCP_SKILL_RUN' as const, rows: rows.map((row) => row.index ?? -1) };
    const egress = grantedEgress(
      declaration.egress,
      rows.flatMap((row) => row.egress),
    );
    return {
      declared,
      granted: true,
      env: env.sort(),
      selfGranted: false,
      egress,
      ...grantedSecrets(declaration.secrets ?? [], egress, rows),
      grantedBy,
    };
  });
}

/**
 * Grant rows (or parts of rows) that grant nothing, with why: a skill not served, a script the
 * skill does not declare, or a variable the script does not ask for. `declared(skill)` returns the
 * skill's declared scripts, or undefined for a skill that is not served.
 */
export function deadGrantRows(
  source: GrantSource,
  declared: (skill: string) => readonly DeclaredScript[] | undefined,
  declaredEgress: (skill: string) => readonly string[] = () => [],
  declaredSecrets: (skill: string) => readonly DeclaredSecret[] = () => [],
): { row: GrantRow; why: string }[] {
  if (source.kind !== 'owner') return [];
  const dead: { row: GrantRow; why: string }[] = [];
  for (const row of source.rows) {
    const scripts = declared(row.skill);
    const script = scripts?.find((s) => s.script === row.script);
    if (scripts === undefined)
      dead.push({ row, why: `MCP_SKILL_RUN names skill "${row.skill}", which is not served; that row grants nothing` });
    else if (!script)
      dead.push({
        row,
        why: `MCP_SKILL_RUN names script "${row.script}", which skill "${row.skill}" does not declare; that row grants nothing`,
      });
    else {
      const unasked = row.env.filter((name) => !script.env.includes(name) || isNeverGrantable(name));
      if (unasked.length > 0) {
        dead.push({
          row,
          why: `MCP_SKILL_RUN grants ${unasked.join(', ')} to ${row.skill}/${row.script}, which does not ask for ${unasked.length > 1 ? 'them' : 'it'} (or may never receive ${unasked.length > 1 ? 'them' : 'it'}); nothing is granted for ${unasked.length > 1 ? 'those variables' : 'that variable'}`,
        });
      }
      const kept = new Set(grantedEgress(declaredEgress(row.skill), row.egress));
      const undeclared = row.egress.filter((entry) => !kept.has(entry));
      if (undeclared.length > 0) {
        dead.push({
          row,
          why: `MCP_SKILL_RUN grants egress ${undeclared.join(', ')} to ${row.skill}/${row.script}, which the skill's mcp-host.egress does not cover; a grant only narrows, so no run reaches ${undeclared.length > 1 ? 'them' : 'it'}`,
        });
      }
      const secrets = declaredSecrets(row.skill);
      for (const granted of row.secrets ?? []) {
        const secret = secrets.find((s) => s.name === granted.name);
        if (secret === undefined) {
          dead.push({
            row,
            why: `MCP_SKILL_RUN grants secret ${granted.name} to ${row.skill}/${row.script}, which the skill does not declare in mcp-host.secrets; nothing is bound for it`,
          });
          continue;
        }
        const wider = parseEgressList(secret.hosts);
        const outside = (granted.hosts ?? []).filter(
          (host) => !parseEgressList([host]).every((entry) => wider.some((d) => entryCovers(d, entry))),
        );
        if (outside.length > 0)
          dead.push({
            row,
            why: `MCP_SKILL_RUN grants secret ${granted.name} for ${outside.join(', ')}, which its declaration's hosts do not cover; a grant only narrows, so it is never sent there`,
          });
      }
    }
  }
  return dead;
}
