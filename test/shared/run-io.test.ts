/**
 * The input rules both processes apply (shared/run-io.ts), and the message cap they imply for the
 * stdio line and the HTTP body.
 */
import { describe, expect, it } from 'vitest';
import { inputPathsProblem, inputSizeProblem, messageCapFor, MAX_INPUT_FILES } from '../../shared/run-io.js';

const MIB = 1024 * 1024;

describe('input paths', () => {
  it('accepts plain relative paths, folders included', () => {
    expect(inputPathsProblem(['form.pdf', 'in/notes.txt', 'in/more/x.json', '.config'])).toBeUndefined();
  });
  it.each([
    ['..', ['../x']],
    ['a nested ..', ['in/../../x']],
    ['absolute', ['/etc/passwd']],
    ['NUL', ['a\u0000']],
    ['a control character', ['a\nb']],
    ['a backslash', ['a\\b']],
    ['an empty segment', ['a//b']],
    ['a trailing slash', ['a/']],
    ['.', ['./a']],
    ['empty', ['']],
    ['a duplicate', ['a', 'a']],
    ['a case collision', ['Report.PDF', 'report.pdf']],
    ['an NFC/NFD collision', ['\u00e9', 'e\u0301']],
    ['an NFKC collision (ligature)', ['\ufb01le', 'file']],
    ['a folder-case collision', ['In/a', 'in/b']],
    ['a file that is a folder of another', ['in', 'in/notes.txt']],
    ['the same, folded', ['IN', 'in/notes.txt']],
  ])('attack: refuses %s', (_name, paths) => {
    expect(inputPathsProblem(paths)).toEqual(expect.any(String));
  });
  it(`refuses more than ${MAX_INPUT_FILES} files`, () => {
    expect(inputPathsProblem(Array.from({ length: MAX_INPUT_FILES + 1 }, (_, i) => `f${i}`))).toMatch(/at most/);
  });
});

describe('input sizes', () => {
  it('counts stdin in the total', () => {
    expect(inputSizeProblem([10, 10], 0, 20)).toBeUndefined();
    expect(inputSizeProblem([10, 10], 1, 20)).toMatch(/21 bytes; at most 20/);
  });
});

describe('the message cap', () => {
  it('leaves room for the whole input allowance as base64 plus 1 MiB, and never goes below 4 MiB', () => {
    expect(messageCapFor(16 * MIB)).toBe(23 * MIB);
    expect(messageCapFor(16 * MIB)).toBeGreaterThanOrEqual(Math.ceil((16 * MIB) / 3) * 4 + MIB);
    expect(messageCapFor(0)).toBe(4 * MIB);
  });
});
