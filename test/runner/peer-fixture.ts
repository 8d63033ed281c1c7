/**
 * @module The skills and settings of the runner the hostile-peer tests talk to (peer-protocol.test.ts
 * and peer-tokens.test.ts): `echo` prints its arguments, `slow` sleeps past a cancel, and a skill
 * outside their folder holds a file a swapped-in symlink could point at. One run at a time, no wait
 * for a slot.
 */
import { writeSkills } from './harness.js';

/** Writes the skills (removed after the calling file) and gives the runner's environment. */
export function peerSkills(): { skills: string; outsideDir: string; env: Record<string, string> } {
  const skills = writeSkills({
    echo: {
      run: [
        { script: 'run.js', interpreter: 'node', timeout: 5 },
        { script: 'other.js', interpreter: 'node', timeout: 5 },
      ],
      files: {
        'run.js': 'process.stdout.write(JSON.stringify(process.argv.slice(2)))',
        'other.js': 'process.stdout.write("other")',
        'outside.js': 'process.stdout.write("outside")',
      },
    },
    slow: { run: [{ script: 'sleep.js', interpreter: 'node', timeout: 20 }], files: { 'sleep.js': 'setTimeout(() => {}, 15000)' } },
  });
  const outsideDir = writeSkills({ elsewhere: { run: [], files: { 'evil.js': 'process.stdout.write("EVIL")' } } });
  // One run at a time and no wait for a slot: a second run is refused BUSY at once (run-slots.test.ts has the rest).
  const env = { SKILLS_DIR: skills, MCP_CONFIRM_TTL_SECONDS: '600', SKILL_MCP_MAX_RUNS: '1', SKILL_MCP_RUN_QUEUE_MS: '0' };
  return { skills, outsideDir, env };
}
