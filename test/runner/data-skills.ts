/**
 * The skills and settings of the data-folder tests (data-folder.test.ts, level; data-folder-once.test.ts,
 * front): python scripts that count, write, plant, look, peek and hold their MCP_DATA_DIR, and one
 * prepare-then-run call.
 */
import type { RunnerClient } from '../../server/runner-client.js';
import { uidRange, writeSkills } from './harness.js';

export const COUNTER = `import os
d = os.environ['MCP_DATA_DIR']
os.makedirs(os.path.join(d, 'sub'), exist_ok=True)
p = os.path.join(d, 'sub', 'count')
n = int(open(p).read()) if os.path.exists(p) else 0
# Rewritten in place: a file an earlier run (another uid, as root) made must stay writable.
with open(p, 'w') as f:
    f.write(str(n + 1))
print(n + 1, d)
`;

const WRITE = `import os, sys
name, size = sys.argv[1], int(sys.argv[2])
with open(os.path.join(os.environ['MCP_DATA_DIR'], name), 'wb') as f:
    f.write(b'x' * size)
print('wrote', name)
`;

const PLANT = `import os
d = os.environ['MCP_DATA_DIR']
os.symlink('/etc/passwd', os.path.join(d, 'passwd-link'))
os.mkfifo(os.path.join(d, 'pipe'))
print('planted')
`;

const LOOK = `import os
d = os.environ.get('MCP_DATA_DIR')
print('none' if d is None else ','.join(sorted(os.listdir(d))) or 'empty')
`;

// Looks at another skill's folder by its host path.
const PEEK = `import os, sys
try:
    print(','.join(sorted(os.listdir(sys.argv[1]))) or 'empty')
except PermissionError:
    print('denied')
except FileNotFoundError:
    print('missing')
`;

// Holds its folder until the test says go (a file the test writes there), then leaves a mark.
const HOLD = `import os, sys, time
d = os.environ['MCP_DATA_DIR']
me = sys.argv[1]
print('other-done' if os.path.exists(os.path.join(d, 'done-a')) else 'other-not-done')
open(os.path.join(d, 'started-' + me), 'w').close()
while me == 'a' and not os.path.exists(os.path.join(d, 'go')):
    time.sleep(0.02)
open(os.path.join(d, 'done-' + me), 'w').close()
`;

/** Writes the data-folder skills into a fresh folder and returns it. */
export function writeDataSkills(): string {
  const py = (script: string) => ({ script, interpreter: 'python3' });
  return writeSkills({
    counter: { run: [py('count.py')], files: { 'count.py': COUNTER }, data: 'true' },
    small: { run: [py('write.py')], files: { 'write.py': WRITE }, data: '{bytes: 1000, files: 5}' },
    planter: { run: [py('plant.py')], files: { 'plant.py': PLANT }, data: 'true' },
    looker: { run: [py('look.py')], files: { 'look.py': LOOK }, data: 'true' },
    plain: { run: [py('look.py'), py('peek.py')], files: { 'look.py': LOOK, 'peek.py': PEEK } },
    holder: { run: [{ ...py('hold.py'), timeout: 60 }], files: { 'hold.py': HOLD }, data: 'true' },
  });
}

/** The data folders' group range, as the runner and `skill-mcp data` are given it. */
export const GIDS = '60100-60131';

/** A runner's settings for the skills in `skills`. */
export function dataEnv(skills: string): Record<string, string> {
  return { SKILLS_DIR: skills, SKILL_MCP_UID_RANGE: uidRange(26), SKILL_MCP_DATA_GID_RANGE: GIDS };
}

/** Prepare, then run with the preview's token (the run may still be refused). */
export async function run(client: RunnerClient, skill: string, script: string, args: string[] = []) {
  const prepared = await client.prepare({ skill, script, args });
  if (!prepared.ok) throw new Error(`prepare refused: ${prepared.error.code} ${prepared.error.message}`);
  const ran = await client.run({ skill, script, args, confirmToken: prepared.result.confirmToken }, { timeoutMs: 60_000 });
  return { prepared: prepared.result, ran };
}
