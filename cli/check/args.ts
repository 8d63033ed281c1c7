/**
 * @module The command line of `skill-mcp check`. Pure: argv in, options or a usage error out.
 */

export const FORMATS = ['text', 'json', 'sarif'] as const;
export type Format = (typeof FORMATS)[number];

export type CheckArgs =
  | { kind: 'help' }
  | { kind: 'run'; format: Format; strict: boolean; paths: string[] }
  | { kind: 'usage'; error: string };

export const CHECK_USAGE = 'usage: skill-mcp check [--format text|json|sarif] [--strict] PATH...';

function isFormat(value: string): value is Format {
  return (FORMATS as readonly string[]).includes(value);
}

export function parseCheckArgs(argv: readonly string[]): CheckArgs {
  let format: Format = 'text';
  let strict = false;
  const paths: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--') {
      paths.push(...argv.slice(i + 1));
      break;
    }
    if (arg === '--help' || arg === '-h') return { kind: 'help' };
    if (arg === '--strict') {
      strict = true;
      continue;
    }
    if (arg === '--format' || arg.startsWith('--format=')) {
      const value = arg === '--format' ? argv[++i] : arg.slice('--format='.length);
      if (value === undefined) return { kind: 'usage', error: '--format needs a value: text, json or sarif' };
      if (!isFormat(value)) return { kind: 'usage', error: `unknown format ${JSON.stringify(value)}; use text, json or sarif` };
      format = value;
      continue;
    }
    if (arg.startsWith('-') && arg !== '-') return { kind: 'usage', error: `unknown option ${JSON.stringify(arg)}` };
    paths.push(arg);
  }
  if (paths.length === 0) return { kind: 'usage', error: 'name at least one skill folder or folder of skills' };
  return { kind: 'run', format, strict, paths };
}
