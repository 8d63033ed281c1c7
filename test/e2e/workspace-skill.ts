/**
 * The skill the workspace tests run (test/e2e/skill-run-workspace.test.ts, test/http/skill-run.test.ts):
 * python3 scripts that read their inputs from the working directory and write outputs there, and
 * hostile ones that plant links, FIFOs, devices and bombs.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

export const SCRIPTS: Record<string, string> = {
  // The happy path: a form from the cwd, stdin, an output folder; where it runs and where the skill is.
  'scripts/fill.py': `import json, os, sys
form = open(sys.argv[1]).read()
data = sys.stdin.read()
os.makedirs("out", exist_ok=True)
with open(sys.argv[2], "w") as f:
    json.dump({"form": form, "stdin": data, "skill_dir": os.environ.get("SKILL_DIR"), "script_in_skill": os.path.exists(os.path.join(os.environ["SKILL_DIR"], "scripts", "fill.py"))}, f)
print("filled", sys.argv[2])
`,
  // The skill folder stays read-only: writing next to the script fails.
  'scripts/write-skill.py': `import os
try:
    open(os.path.join(os.environ["SKILL_DIR"], "planted.txt"), "w").write("x")
    print("wrote")
except OSError as e:
    print("refused", e.errno)
`,
  // Links, a FIFO, a device node, hard links: none of them is ever followed or read.
  'scripts/plant.py': `import json, os, stat
done = {}
def attempt(name, fn):
    try:
        fn(); done[name] = "made"
    except OSError as e:
        done[name] = "failed %d" % e.errno
attempt("passwd-link", lambda: os.symlink("/etc/passwd", "passwd-link"))
attempt("dir-link", lambda: os.symlink("/etc", "dir-link"))
attempt("pipe", lambda: os.mkfifo("pipe"))
attempt("null-device", lambda: os.mknod("null-device", stat.S_IFCHR | 0o666, os.makedev(1, 3)))
attempt("etc-passwd-hardlink", lambda: os.link("/etc/passwd", "etc-passwd-hardlink"))
open("own.txt", "w").write("own\\n")
attempt("own-hardlink", lambda: os.link("own.txt", "own-hardlink"))
open("plain.txt", "w").write("plain\\n")
print(json.dumps(done))
`,
  // Names that are not valid UTF-8 (Linux names are bytes): a file beside a real U+FFFD name and a
  // literal backslash spelling, and a folder of such a name with files in it.
  'scripts/byte-names.py': `import os
os.makedirs(b"out", exist_ok=True)
open(b"out/drop\\xfe.txt", "wb").write(b"not utf-8\\n")
open("out/drop\\ufffd.txt".encode(), "wb").write(b"the real replacement character\\n")
open(b"out/drop\\\\xfe.txt", "wb").write(b"a literal backslash\\n")
os.makedirs(b"bad\\xff/inner", exist_ok=True)
open(b"bad\\xff/inner/deep.txt", "wb").write(b"inside\\n")
open(b"bad\\xff/x\\xfe", "wb").write(b"inside too\\n")
open(b"plain.txt", "wb").write(b"plain\\n")
print(sorted(os.listdir(b".")))
`,
  // Folders it locks (chmod 000) on its way out, one named with a byte that is not valid UTF-8:
  // the runner must still remove them (as the script's own uid it reopens each folder first). It
  // says so first: where the runner's watcher keeps the cap (no tmpfs), a folder it cannot read
  // stops the run at the watcher's next look, which may fall before the script's own end.
  'scripts/lock.py': `import os
print("locked", flush=True)
for name in (b"locked", b"locked\\xff"):
    os.makedirs(name + b"/inner")
    open(name + b"/inner/f.txt", "wb").write(b"x")
    os.chmod(name + b"/inner", 0)
    os.chmod(name, 0)
`,
  // Output bombs.
  'scripts/many.py': `import os
os.makedirs("many", exist_ok=True)
for i in range(20000):
    open("many/%06d" % i, "w").close()
print("made")
`,
  'scripts/huge.py': `with open("huge.bin", "wb") as f:
    f.write(b"h" * (8 * 1024 * 1024))
open("small.txt", "w").write("small\\n")
`,
  'scripts/sparse.py': `import os
with open("sparse.bin", "wb") as f:
    f.truncate(10 * 1024 ** 3)
print(os.stat("sparse.bin").st_size)
`,
  'scripts/budget.py': `data = bytes(range(256)) * (8 * 1024)
for name in ("a.bin", "b.bin"):
    open(name, "wb").write(data)
`,
  // A changed input comes back; an unchanged one does not.
  'scripts/edit.py': `open("data.txt", "a").write("more\\n")
print(open("same.txt").read(), end="")
`,
  // Runs until killed (timeout or cancel), after marking that it started.
  'scripts/hold.py': `import time
open("started", "w").write("yes")
time.sleep(120)
`,
};

const TIMEOUTS: Record<string, number> = { 'scripts/hold.py': 3, 'scripts/many.py': 240 };

export function writeWorkspaceSkill(root: string): void {
  const rows = Object.keys(SCRIPTS)
    .map((s) => `    - script: ${s}\n      interpreter: python3\n      timeout: ${TIMEOUTS[s] ?? 60}`)
    .join('\n');
  const files: Record<string, string> = {
    'SKILL.md': `---\nname: workspace\ndescription: Scripts that take files and give files back.\nmcp-host:\n  version: 1\n  run:\n${rows}\n---\nRun the scripts.\n`,
    ...SCRIPTS,
  };
  for (const [path, text] of Object.entries(files)) {
    const full = join(root, 'workspace', path);
    mkdirSync(dirname(full), { recursive: true, mode: 0o755 });
    writeFileSync(full, text, { mode: 0o644 });
  }
}
