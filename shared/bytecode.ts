/**
 * @module Compiled Python a skill may ship: `__pycache__/` folders and `*.pyc` / `*.pyo` files.
 * Python prefers them to the source beside them (an unchecked-hash `.pyc` is never compared with
 * its `.py`) and imports a sourceless `name.pyc` as module `name`, so shipped bytecode runs code
 * no person reviewed. Run copies leave it out (runner/workspace/run-copy.ts), python runs without
 * reading or writing bytecode (runner/sandbox/spawn.ts), and `skill-mcp check` reports it.
 */

/** Whether a `/`-separated path inside a skill is (or lies in) compiled Python. */
export function isBytecode(path: string): boolean {
  const segments = path.split('/');
  // Security: any folder named __pycache__ (Python looks only there for cached bytecode), and
  // .pyc/.pyo anywhere (a sourceless module is imported from the folder it sits in).
  if (segments.slice(0, -1).includes('__pycache__')) return true;
  return /\.py[co]$/i.test(segments[segments.length - 1]!);
}
