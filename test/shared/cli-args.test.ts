/**
 * The one flag parser every command uses: the spellings it accepts, and the command lines it
 * refuses with a UsageError that names the flag (the bins print it with their usage, exit 2).
 */
import { describe, expect, test } from 'vitest';
import { parseFlags, UsageError, wantsHelp, type FlagSpec } from '../../shared/cli-args.js';

const FLAGS: Record<string, FlagSpec> = {
  socket: { type: 'string' },
  'state-dir': { type: 'string' },
  json: { type: 'boolean' },
  n: { type: 'string', short: 'n', shortOnly: true },
};

function refusal(argv: string[], options: { positionals?: boolean } = {}): string {
  try {
    parseFlags(argv, FLAGS, options);
  } catch (error) {
    expect(error).toBeInstanceOf(UsageError);
    return (error as Error).message;
  }
  throw new Error(`accepted: ${argv.join(' ')}`);
}

describe('parseFlags', () => {
  test('--flag value, --flag=value, -n N and -nN; the last occurrence wins; -- ends the flags', () => {
    expect(parseFlags(['--socket', 'a', '--state-dir=b', '-n', '3'], FLAGS).values).toEqual({ socket: 'a', 'state-dir': 'b', n: '3' });
    expect(parseFlags(['-n5', '--socket=a', '--socket', 'c'], FLAGS).values).toEqual({ n: '5', socket: 'c' });
    expect(parseFlags(['--json', 'f', '--', '--socket'], FLAGS, { positionals: true })).toEqual({
      values: { json: true },
      positionals: ['f', '--socket'],
    });
  });

  test('an empty inline value is a value (the command decides what it means)', () => {
    expect(parseFlags(['--socket='], FLAGS).values).toEqual({ socket: '' });
  });

  test('refuses unknown flags, naming them as written', () => {
    expect(refusal(['--sokcet', 'a'])).toBe('unknown option "--sokcet"');
    expect(refusal(['-x'])).toBe('unknown option "-x"');
    // A short-only flag has no long spelling.
    expect(refusal(['--n', '3'])).toBe('unknown option "--n"');
  });

  test('a flag swallowing the next flag as its value is refused, not taken as a path', () => {
    expect(refusal(['--socket', '--state-dir', 'd'])).toBe('--socket needs a value');
    expect(refusal(['--socket'])).toBe('--socket needs a value');
    expect(refusal(['-n'])).toBe('-n needs a value');
  });

  test('a switch given a value, and positionals where none are taken, are refused', () => {
    expect(refusal(['--json=yes'])).toBe('--json takes no value');
    expect(refusal(['stray'])).toBe('unexpected argument "stray"');
  });
});

test('wantsHelp: --help or -h before --, not after', () => {
  expect(wantsHelp(['verify', '--help'])).toBe(true);
  expect(wantsHelp(['-h'])).toBe(true);
  expect(wantsHelp(['--', '--help'])).toBe(false);
});
