/**
 * @module Command-line flags for every `skill-mcp` command, through `node:util` `parseArgs`: the
 * same spellings everywhere (`--flag value`, `--flag=value`, `-n 5`, `--` ends the flags) and the
 * same refusals (an unknown flag, a flag without its value, a value given to a switch). A refusal
 * is a {@link UsageError}: the command prints it with its usage and exits 2.
 */
import { parseArgs } from 'node:util';

/** A flag as a command declares it: its long name is the key; `shortOnly` flags have no `--` form. */
export interface FlagSpec {
  type: 'string' | 'boolean';
  short?: string;
  shortOnly?: boolean;
}

export type FlagValues = Record<string, string | boolean | undefined>;

/** The command line is not one the command accepts; the message names the flag. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
  readonly code = 'USAGE';
  /** Exit status of a usage error, for every command. */
  static readonly EXIT = 2;
  /** `usage`: the command's usage text, printed after the message. */
  constructor(
    message: string,
    readonly usage?: string,
  ) {
    super(message);
  }
}

function spelling(name: string, spec: FlagSpec): string {
  return spec.shortOnly && spec.short ? `-${spec.short}` : `--${name}`;
}

/**
 * Parses `argv` against `flags`. The last occurrence of a flag wins. Positionals are refused unless
 * `positionals` is true. Throws {@link UsageError}.
 */
export function parseFlags(
  argv: readonly string[],
  flags: Record<string, FlagSpec>,
  options: { positionals?: boolean; usage?: string } = {},
): { values: FlagValues; positionals: string[] } {
  const refuse: (message: string) => never = (message) => {
    throw new UsageError(message, options.usage);
  };
  // Non-strict, with tokens: parseArgs' own strict messages differ between Node versions, and ours
  // must keep naming the flag the way the commands always have.
  const { tokens } = parseArgs({
    args: [...argv],
    options: Object.fromEntries(
      Object.entries(flags).map(([name, spec]) => [name, { type: spec.type, ...(spec.short ? { short: spec.short } : {}) }]),
    ),
    strict: false,
    allowPositionals: true,
    tokens: true,
  });
  const values: FlagValues = {};
  const positionals: string[] = [];
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i]!;
    if (token.kind === 'option-terminator') continue;
    if (token.kind === 'positional') {
      if (!options.positionals) refuse(`unexpected argument ${JSON.stringify(token.value)}`);
      positionals.push(token.value);
      continue;
    }
    const spec = flags[token.name];
    const known = spec !== undefined && (token.rawName === `-${spec.short}` || (!spec.shortOnly && token.rawName === `--${token.name}`));
    if (!known) refuse(`unknown option ${JSON.stringify(token.rawName)}`);
    const shown = spelling(token.name, spec);
    if (spec.type === 'boolean') {
      if (token.value !== undefined) refuse(`${shown} takes no value`);
      values[token.name] = true;
      continue;
    }
    // Security of intent: `--socket --state-dir d` must not make "--state-dir" the socket path.
    const value = token.value;
    if (value === undefined || (!token.inlineValue && value.startsWith('-') && value !== '-')) refuse(`${shown} needs a value`);
    values[token.name] = value;
  }
  return { values, positionals };
}

/** A string flag's value (flags are declared by the caller, so the type is known). */
export function stringFlag(values: FlagValues, name: string): string | undefined {
  const value = values[name];
  return typeof value === 'string' ? value : undefined;
}

/** True when `argv` asks for help (`--help` or `-h`) before any `--`. */
export function wantsHelp(argv: readonly string[]): boolean {
  const end = argv.indexOf('--');
  return (end < 0 ? argv : argv.slice(0, end)).some((arg) => arg === '--help' || arg === '-h');
}
