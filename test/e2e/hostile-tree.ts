/**
 * @module Builds, in a temp dir, the broken and hostile skill folders git cannot hold or must not
 * hold: FIFOs, links to /etc/passwd, a 256 MiB sparse file, 2,100 files, BOMs, YAML anchors,
 * duplicate keys, duplicate names across roots, linked skill folders inside and outside a root,
 * broken declarations, and roots that cannot be read.
 *
 * Unreadable roots: CI runs as root, and root bypasses permission bits (a `chmod 000` folder
 * stays readable), so "unreadable" is made the only ways that hold for root too: a root that
 * does not exist, and a root that is a regular file.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { tempDir } from './harness.js';

export interface HostileTree {
  /** The temp dir holding everything (must never appear in what the model sees). */
  base: string;
  /** The main root: every per-skill case. */
  main: string;
  /** A second root, sharing one skill name with the main root. */
  second: string;
  /** Roots that cannot be read even by root. */
  missingRoot: string;
  fileRoot: string;
  /** A root of 40 skills (the default limit is 32). */
  crowded: string;
  /** A skill folder outside every root, linked from inside the main root. */
  outside: string;
  /** Bytes no answer may ever contain. */
  secret: string;
}

export const SECRET = 'TOKEN=sk-live-must-never-leave-the-server';

function put(path: string, data: string | Buffer): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, data);
}

function skillMd(name: string, description: string, extra = '', body = `\n# ${name}\n\nInstructions for ${name}.\n`): string {
  return `---\nname: ${name}\ndescription: ${description}\n${extra}---\n${body}`;
}

/** Built inside the suite's temp tree, readable by the front's unprivileged uid (see harness.ts). */
export function buildHostileTree(): HostileTree {
  const base = tempDir('hostile');
  const main = join(base, 'main-root');
  const second = join(base, 'second-root');
  const outside = join(base, 'outside-skill');
  const crowded = join(base, 'crowded-root');
  const at = (...parts: string[]): string => join(main, ...parts);

  // A well-formed skill with traps planted inside it.
  put(
    at('good', 'SKILL.md'),
    skillMd(
      'good',
      'A good skill with traps planted next to its files.',
      'mcp-host:\n  version: 1\n  run:\n    - script: scripts/run.js\n      interpreter: node\n',
    ),
  );
  put(at('good', 'references', 'a.md'), '# A\n');
  put(at('good', 'references', 'b.md'), '# B\n');
  put(at('good', 'scripts', 'run.js'), "console.log('run');\n");
  put(at('good', '.env'), `${SECRET}\n`);
  put(at('good', '.git', 'config'), `[remote "origin"]\n\turl = https://user:${SECRET}@example.com/x.git\n`);
  put(at('good', 'references', '.hidden-notes.md'), `${SECRET}\n`);
  symlinkSync('/etc/passwd', at('good', 'leak'));
  symlinkSync('../../second-root/dup-skill/SKILL.md', at('good', 'neighbour-link'));
  symlinkSync('references/a.md', at('good', 'alias-of-a.md'));
  symlinkSync('references', at('good', 'refs-link'));
  symlinkSync('.', at('good', 'self-loop'));
  symlinkSync('does-not-exist', at('good', 'dangling'));
  execFileSync('mkfifo', [at('good', 'pipe')]);
  put(at('good', 'tab\there.txt'), 'a file name with a control character\n');

  // Big files: the 256 MiB sparse file, a >1 MiB text file, and files that add up past 4 MiB.
  put(at('big-files', 'SKILL.md'), skillMd('big-files', 'Large files for the batch limits.'));
  put(at('big-files', 'huge.bin'), '');
  truncateSync(at('big-files', 'huge.bin'), 256 * 1024 * 1024);
  // 1 MiB + a few bytes of text whose 1 MiB cut falls inside a 3-byte character.
  put(at('big-files', 'long.txt'), `${'x'.repeat(1024 * 1024 - 1)}€${'tail'.repeat(10)}`);
  for (const n of [1, 2, 3, 4, 5]) put(at('big-files', `part-${n}.bin`), Buffer.alloc(900 * 1024, n));
  put(at('big-files', 'small.txt'), 'small\n');
  // Exactly 4 MiB of binary in four files: the largest batch allowed must still reach the client.
  put(at('full-batch', 'SKILL.md'), skillMd('full-batch', 'Four files of exactly 1 MiB of binary.'));
  for (const n of [1, 2, 3, 4])
    put(at('full-batch', `mib-${n}.bin`), Buffer.from(Array.from({ length: 1024 * 1024 }, (_, i) => (i * 131 + n) & 0xff)));

  // Skills served by the tools but not published in skill://.
  put(at('bom-skill', 'SKILL.md'), `\uFEFF${skillMd('bom-skill', 'A SKILL.md that starts with a byte-order mark.')}`);
  put(at('Bad_Name', 'SKILL.md'), skillMd('Bad_Name', 'A directory name strict hosts refuse.'));
  put(at('mismatch', 'SKILL.md'), skillMd('other-name', 'The frontmatter name differs from the folder.'));
  put(at('long-desc', 'SKILL.md'), skillMd('long-desc', 'd'.repeat(1100)));

  // Skills that are not served at all.
  put(at('anchors', 'SKILL.md'), '---\nname: anchors\ndescription: &d anchored\nother: *d\n---\nbody\n');
  put(at('dup-keys', 'SKILL.md'), '---\nname: dup-keys\ndescription: first\ndescription: second\n---\nbody\n');
  put(at('no-frontmatter', 'SKILL.md'), '# Just markdown\n\nNo frontmatter here.\n');
  mkdirSync(at('empty-dir'), { recursive: true });
  put(at('empty-dir', 'README.md'), 'not a skill\n');
  mkdirSync(at('skill-md-dir', 'SKILL.md'), { recursive: true });
  mkdirSync(at('skill-md-link'), { recursive: true });
  symlinkSync('/etc/passwd', at('skill-md-link', 'SKILL.md'));
  put(at('100%', 'SKILL.md'), skillMd('percent', 'A directory name with a percent sign.'));

  // Declarations.
  put(
    at('broken-decl', 'SKILL.md'),
    skillMd('broken-decl', 'The mcp-host block does not parse.', 'mcp-host:\n  version: 1\n  run: [unclosed\n'),
  );
  put(
    at('unknown-keys', 'SKILL.md'),
    skillMd(
      'unknown-keys',
      'The mcp-host block has keys nobody knows.',
      'mcp-host:\n  version: 1\n  sandbox: none\n  run:\n    - script: scripts/x.js\n      interpreter: node\n      sudo: true\n',
    ),
  );
  put(at('unknown-keys', 'scripts', 'x.js'), "console.log('x');\n");
  put(
    at('future-decl', 'SKILL.md'),
    skillMd(
      'future-decl',
      'An mcp-host block of an unknown major version.',
      'mcp-host:\n  version: 2\n  run:\n    - script: scripts/y.js\n      interpreter: node\n',
    ),
  );
  put(at('future-decl', 'scripts', 'y.js'), "console.log('y');\n");
  put(
    at('missing-script', 'SKILL.md'),
    skillMd(
      'missing-script',
      'Declares a script that is not there.',
      'mcp-host:\n  version: 1\n  run:\n    - script: scripts/gone.js\n      interpreter: node\n    - script: scripts/here.js\n      interpreter: node\n',
    ),
  );
  put(at('missing-script', 'scripts', 'here.js'), "console.log('here');\n");
  put(
    at('odd-interpreter', 'SKILL.md'),
    skillMd(
      'odd-interpreter',
      'Declares an interpreter outside the fixed set.',
      'mcp-host:\n  version: 1\n  run:\n    - script: run.sh\n      interpreter: bash\n',
    ),
  );
  put(at('odd-interpreter', 'run.sh'), 'echo hi\n');

  // 2,100 files in one skill (limit 2,000).
  put(at('many-files', 'SKILL.md'), skillMd('many-files', 'More files than the per-skill limit.'));
  for (let i = 0; i < 2100; i++) put(at('many-files', `d${Math.floor(i / 100)}`, `f${i}.txt`), `${i}\n`);

  // Linked skill folders: an alias of a served skill, a link to a hidden in-root folder, a link
  // leaving the root, and a dangling link.
  symlinkSync('good', at('link-to-good'));
  put(at('.store', 'stored-skill', 'SKILL.md'), skillMd('stored-skill', 'Reached only through an in-root link.'));
  symlinkSync('.store/stored-skill', at('aliased'));
  put(join(outside, 'SKILL.md'), skillMd('outside-skill', 'Lives outside every root.'));
  symlinkSync(outside, at('escape-link'));
  symlinkSync(join(base, 'nowhere'), at('dangling-skill'));

  // One name in two roots: both refused.
  put(at('dup-skill', 'SKILL.md'), skillMd('dup-skill', 'Claimed in the main root.'));
  put(join(second, 'dup-skill', 'SKILL.md'), skillMd('dup-skill', 'Claimed again in the second root.'));
  put(join(second, 'only-second', 'SKILL.md'), skillMd('only-second', 'Only in the second root.'));

  // Unreadable roots.
  const missingRoot = join(base, 'no-such-root');
  const fileRoot = join(base, 'a-file-root');
  put(fileRoot, 'not a folder\n');

  // 40 skills (default limit 32).
  for (let i = 0; i < 40; i++) {
    const name = `crowd-${String(i).padStart(2, '0')}`;
    put(join(crowded, name, 'SKILL.md'), skillMd(name, `Crowd member ${i}.`));
  }
  return { base, main, second, missingRoot, fileRoot, crowded, outside, secret: SECRET };
}
