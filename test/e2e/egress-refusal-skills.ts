/**
 * @module The skill the egress-refusal tests connect with (skill-run-egress-refusals.test.ts and
 * skill-run-egress-refusals-off.test.ts): probe.py tries a declared fetch and then one destination
 * of each refusal reason, flood.py makes 1000 refused connections, quiet.py connects nowhere.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CONNECT_PY } from './run-skills.js';

const PROBE_PY = `import json, sys, urllib.request
from connect import connect
port, undeclared = sys.argv[1], sys.argv[2]
out = {}
with urllib.request.urlopen("http://127.0.0.1:%s/allowed" % port, timeout=20) as r:
    out["allowed"] = r.status
for target in ["api.example.com:443", "127.0.0.1:" + undeclared, "localhost:" + port, "169.254.169.254:80", "0.0.0.0:80", "api.example.com:443"]:
    out[target] = connect(target)
print(json.dumps(out))
`;
const FLOOD_PY = `from connect import connect
statuses = set(connect("h%d.example:443" % i) for i in range(1000))
print(sorted(statuses))
`;

/** Writes the skill `name` under `dir`, declaring `egress` (none when undefined). */
export function writeConnectorSkill(dir: string, name: string, egress: string[] | undefined): void {
  const files: Record<string, string> = {
    'SKILL.md':
      `---\nname: ${name}\ndescription: Connects places for the egress refusal tests.\nmcp-host:\n  version: 1\n  run:\n` +
      ['probe.py', 'flood.py', 'quiet.py'].map((s) => `    - script: ${s}\n      interpreter: python3\n      timeout: 120\n`).join('') +
      (egress ? `  egress: [${egress.join(', ')}]\n` : '') +
      '---\nConnect things.\n',
    'connect.py': CONNECT_PY,
    'probe.py': PROBE_PY,
    'flood.py': FLOOD_PY,
    'quiet.py': 'print("quiet")\n',
  };
  mkdirSync(join(dir, name), { recursive: true, mode: 0o755 });
  for (const [path, text] of Object.entries(files)) writeFileSync(join(dir, name, path), text, { mode: 0o644 });
}
