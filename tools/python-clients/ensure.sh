#!/usr/bin/env bash
# Makes tools/python-clients/venv (gitignored) holding the Python clients of requirements.txt,
# for test/e2e/python-clients.test.ts. Does nothing when the venv already holds exactly them.
# PIP_TIMEOUT_S bounds the whole install (default 600 s): a package index that does not answer
# fails CI with a message instead of hanging it.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
venv="$here/venv"
stamp="$venv/.requirements"
timeout_s="${PIP_TIMEOUT_S:-600}"
# The venv must work for every uid that runs the tests (CI runs them again unprivileged): a Python
# under /root (pyenv's) is unreadable to them, so the system's is preferred. PYTHON overrides.
python="${PYTHON:-}"
if [ -z "$python" ]; then
  if [ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import venv, ensurepip' 2>/dev/null; then python=/usr/bin/python3; else python=python3; fi
fi
want="$(cat "$here/requirements.txt"; echo "# python: $python")"
if [ -x "$venv/bin/python" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  echo "python clients: already installed in $venv ($(grep -v '^#' "$here/requirements.txt" | tr '\n' ' '))"
  exit 0
fi
echo "python clients: $("$python" --version) ($python) -> venv $venv"
rm -rf "$venv"
"$python" -m venv "$venv"
echo "python clients: pip install -r requirements.txt (mcp==2.3.0 fastmcp==4.0.10), timeout ${timeout_s} s"
log="$here/pip-install.log"
if ! timeout "$timeout_s" "$venv/bin/pip" install --quiet --retries 1 --disable-pip-version-check -r "$here/requirements.txt" >"$log" 2>&1; then
  tail -n 20 "$log" >&2
  rm -rf "$venv"
  echo "python clients: pip install failed or took over ${timeout_s} s (full output: $log); test/e2e/python-clients.test.ts needs them" >&2
  exit 1
fi
printf '%s\n' "$want" > "$stamp"
"$venv/bin/python" -c 'import importlib.metadata as m; print("python clients: installed mcp", m.version("mcp"), "fastmcp", m.version("fastmcp"))'
