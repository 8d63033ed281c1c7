/**
 * @module The rules `skill-mcp check` applies, each with a stable id, a default level and help.
 * `server/<reason>` rules are the catalog's own problems (shared/problems.ts), reported from the
 * code the server runs; the others are authoring risks the server does not refuse but a reviewer
 * should see. The ids are part of the output contract: rename none, add freely.
 */
import { PROBLEM_REASONS, type ProblemReason } from '../../shared/problems.js';
import type { Level } from './finding.js';
import { ENTROPY_MIN_LENGTH, ENTROPY_THRESHOLD_BITS } from './credentials.js';
import { SKILL_MD_MAX_LINES } from './advice.js';

export interface Rule {
  id: string;
  level: Level;
  /** One line: what the rule catches. */
  short: string;
  /** What to do about it, and how the rule decides. */
  help: string;
}

/**
 * Levels and help for every catalog problem. A `Record` over every reason, so a reason added to
 * shared/problems.ts does not compile until someone decides how check reports it.
 */
const SERVER: Record<ProblemReason, Omit<Rule, 'id'>> = {
  'root-unreadable': {
    level: 'error',
    short: 'A folder of skills cannot be read',
    help: 'The server cannot list this folder, so none of its skills are served. Check permissions.',
  },
  'no-skill-md': {
    level: 'warning',
    short: 'A folder in a root of skills has no SKILL.md',
    help: 'Every folder directly in a root of skills (or in its skills/ folder) is a candidate skill. Add a SKILL.md, or move the folder elsewhere if it is not a skill.',
  },
  'unreadable-skill-md': {
    level: 'error',
    short: 'SKILL.md cannot be read as a regular file',
    help: 'SKILL.md must be a regular file (not a link, FIFO or directory) of at most 8 MiB. The skill is not served.',
  },
  'malformed-frontmatter': {
    level: 'error',
    short: 'The frontmatter cannot be parsed',
    help: 'SKILL.md must start with a "---" line, then YAML 1.2 (core schema; no anchors, aliases, tags or duplicate keys), then a closing "---" line. The skill is not served.',
  },
  declaration: {
    level: 'error',
    short: 'A declaration is rejected, conflicting or has unknown keys',
    help: 'A declaration (the frontmatter mcp-host: block, mcp-host.yaml, or with SKILL_MCP_DECLARATIONS set an operator\'s <skill>.yaml) is parsed strictly (docs/skills.md, "Declaring scripts"). A rejected one, or a skill declaring in both SKILL.md and mcp-host.yaml, costs the skill its scripts; an unknown key (often a typo) is ignored; an operator file naming no served skill is not applied.',
  },
  'duplicate-name': {
    level: 'error',
    short: 'Two directories serve the same skill name',
    help: 'A name claimed by two directories is refused on both sides. Rename one of them.',
  },
  'name-mismatch': {
    level: 'warning',
    short: 'The frontmatter name differs from the directory name',
    help: 'A skill is served under its directory name, never the frontmatter name. Make them equal (strict hosts require it).',
  },
  'unusable-name': {
    level: 'error',
    short: 'The directory name cannot be served',
    help: 'Directory names must not be hidden, hold control characters, "\\", "%" or "/", or exceed 255 bytes. Rename the directory.',
  },
  'declared-script-missing': {
    level: 'error',
    short: 'A declared script is missing or not a regular file',
    help: 'Every script in mcp-host.run must be a regular file inside the skill that the server serves (not hidden, not a link leaving the skill, not a directory or special file). Otherwise it never runs.',
  },
  'symlink-escape': {
    level: 'error',
    short: 'A link leaves its skill or root, or leads nowhere',
    help: 'Links are followed only while they stay inside the skill (or, for a linked skill, its root). Replace the link with the file, or remove it.',
  },
  'unusable-path': {
    level: 'warning',
    short: 'A file or folder in the skill cannot be served',
    help: 'Names with control characters, "\\" or "%", special files and unreadable folders are left out of the manifest. Rename or remove them.',
  },
  'file-limit': {
    level: 'error',
    short: 'The skill has more files or folders than the server walks',
    help: 'The walk stopped at SKILL_MCP_MAX_FILES / SKILL_MCP_MAX_DIRS; the manifest is incomplete. Remove files, or raise the limits where the server runs.',
  },
  'skill-limit': {
    level: 'error',
    short: 'More skills than the server serves',
    help: 'Skills beyond SKILL_MCP_MAX_SKILLS (sorted by name) are not served. Split the folder, or raise the limit where the server runs.',
  },
  grant: {
    level: 'error',
    short: 'The owner grant (MCP_SKILL_RUN) is malformed or names nothing',
    help: 'Reported by a running server only; check does not read MCP_SKILL_RUN.',
  },
  'environ-unscrubbed': { level: 'error', short: 'The runner could not clear its environment', help: 'Reported by a running server only.' },
  'config-mismatch': {
    level: 'error',
    short: 'The runner was configured otherwise than the front',
    help: 'Reported by a running server only.',
  },
  'content-mismatch': {
    level: 'error',
    short: 'The runner serves other bytes of a skill than the front',
    help: 'Reported by a running server only: the two processes see different copies of the skill folder.',
  },
  'not-published': {
    level: 'error',
    short: 'The skill is kept out of the skill:// namespace',
    help: 'Strict SEP-2640 hosts could not load the skill, so it is served by the tools only. Each finding names one reason, with its figure; fix each.',
  },
  config: {
    level: 'error',
    short: 'A SKILL_MCP_* setting is not valid',
    help: 'A limit that is not a positive integer is ignored and the default kept.',
  },
};

const AUTHORING: Rule[] = [
  {
    id: 'unicode/bidi',
    level: 'error',
    short: 'Bidirectional control character',
    help: 'U+202A-U+202E and U+2066-U+2069 reorder how text is displayed, so what a reviewer reads differs from what a model or interpreter reads ("Trojan Source"). Remove them; write right-to-left text without explicit controls.',
  },
  {
    id: 'unicode/tag',
    level: 'error',
    short: 'Unicode tag characters (invisible text)',
    help: 'U+E0000-U+E007F are invisible in most renderers, yet models read them as ASCII ("ASCII smuggling"). The message shows what they spell. Remove them.',
  },
  {
    id: 'unicode/zero-width',
    level: 'warning',
    short: 'Zero-width character',
    help: 'U+200B-U+200D, U+2060 and U+FEFF (anywhere but the very start of a file) are invisible; they can split words to evade review or hide data. A zero-width joiner between two emoji (an emoji sequence) is not reported.',
  },
  {
    id: 'credential/private-key',
    level: 'error',
    short: 'Private key block',
    help: 'A "-----BEGIN ... PRIVATE KEY-----" block is shipped with the skill and served to every client. Remove it and rotate the key.',
  },
  {
    id: 'credential/cloud-key',
    level: 'error',
    short: 'Cloud access key id',
    help: 'An AWS access key id (AKIA or ASIA and 16 more characters). Values containing "EXAMPLE" (documentation keys) are not reported. Remove it and rotate the key; declare the variable in mcp-host.env instead.',
  },
  {
    id: 'credential/service-token',
    level: 'error',
    short: 'Service token',
    help: 'A GitHub (ghp_, gho_, ghu_, ghs_, ghr_, github_pat_), Slack (xoxb-, xoxa-, xoxp-, xoxr-, xoxs-), OpenAI/Anthropic-style (sk-...), Stripe (sk_live_, rk_live_) or Google (AIza...) token. Remove it and rotate it; scripts should read secrets from granted variables.',
  },
  {
    id: 'credential/high-entropy',
    level: 'warning',
    short: 'High-entropy value assigned to a secret-like name',
    help: `A value of at least ${ENTROPY_MIN_LENGTH} characters, holding letters and digits, with a Shannon entropy of at least ${ENTROPY_THRESHOLD_BITS} bits per character, assigned (":" or "=") to a name containing secret, token, password, passwd, pwd, api_key, apikey, access_key, auth_key, private_key, client_secret or credential. A heuristic: references ($VAR, process.env..., <placeholder>) are skipped. The finding shows a redacted prefix only.`,
  },
  {
    id: 'script/interpreter',
    level: 'error',
    short: 'A declared script names an interpreter the server does not run',
    help: 'mcp-host.run[].interpreter must be node or python3; any other value means the script never runs (it is never inferred from the file).',
  },
  {
    id: 'link/missing-target',
    level: 'error',
    short: 'A relative link in SKILL.md leads to no served file',
    help: 'A relative markdown link ([text](path) or [id]: path, outside code) must name a file or folder the skill serves; a model following it gets NOT_FOUND. Links leaving the skill and links to hidden files never work.',
  },
  {
    id: 'hidden/bytecode',
    level: 'error',
    short: 'Compiled Python (__pycache__, .pyc, .pyo) is shipped',
    help: 'Python runs a cached .pyc instead of the .py beside it (an unchecked-hash .pyc is never compared with its source) and imports a sourceless name.pyc as a module, so shipped bytecode is hidden code. skill-mcp leaves it out of every run copy and runs python with -B and an empty cache prefix; remove it from the skill.',
  },
  {
    id: 'hidden/instructions',
    level: 'warning',
    short: 'Instructions hidden from a reader',
    help: 'An HTML comment or a <details> block in SKILL.md holds instruction-like text: a person reading the rendered page does not see it, a model reads it. A heuristic (imperative verbs, "you must", "ignore previous instructions"): move real instructions into visible text.',
  },
  {
    id: 'advice/skill-md-length',
    level: 'note',
    short: `SKILL.md is over ${SKILL_MD_MAX_LINES} lines`,
    help: `Models load the whole SKILL.md; keep it under ${SKILL_MD_MAX_LINES} lines and move detail into files it links to.`,
  },
  {
    id: 'advice/nested-skill',
    level: 'note',
    short: "A SKILL.md inside a skill's folder",
    help: "A skill is a folder with SKILL.md at its top, directly in a skills folder (or its skills/ folder). A SKILL.md deeper inside a skill is one of that skill's files: skill-mcp serves it as such, `skill-mcp pull` copies it as such, and coding agents do not load it as a skill (docs/nested-skills.md). Move the folder to the top to make it a skill of its own.",
  },
  {
    id: 'advice/description-trigger',
    level: 'note',
    short: 'The description does not say when to use the skill',
    help: 'Hosts choose a skill by its description. Say when it applies ("Use when ...", "for ...", "before ..."); the rule looks for when, whenever, for, if, before, after, during or while.',
  },
  {
    id: 'advice/declaration-sidecar',
    level: 'note',
    short: 'The mcp-host declaration is in the frontmatter',
    help: 'The frontmatter mcp-host: block is read, but the Agent Skills specification allows no such key, so other hosts and validators reject the skill. Move the same fields into mcp-host.yaml at the skill\'s root; skill-mcp check --fix does it (docs/skills.md, "Declaring scripts").',
  },
  {
    id: 'spec/frontmatter-field',
    level: 'warning',
    short: 'A frontmatter key or value outside the Agent Skills specification',
    help: 'The specification allows exactly name, description, license, compatibility, metadata (a map of string to string) and allowed-tools (a string). Reference validators, other hosts and skill uploads refuse any other key; mcp-host is accepted here and advised into mcp-host.yaml.',
  },
];

/** Every rule, sorted by id (the SARIF rule table and `--help` use this order). */
export const RULES: readonly Rule[] = [
  ...PROBLEM_REASONS.map((reason) => ({ id: serverRuleId(reason), ...SERVER[reason] })),
  ...AUTHORING,
].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));

const BY_ID = new Map(RULES.map((rule) => [rule.id, rule]));

export function serverRuleId(reason: ProblemReason): string {
  return `server/${reason}`;
}

export function ruleById(id: string): Rule {
  const rule = BY_ID.get(id);
  if (!rule) throw new Error(`unknown rule ${id}`);
  return rule;
}
