#!/usr/bin/env python3
"""Checks action.yml, the composite action's metadata file.

actionlint lints workflow files, not action metadata: given action.yml it reports a workflow
without `on:` and `jobs:`. It does read action.yml when a workflow uses the action as `uses: ./`
(examples/workflows/profile-gate.yml does, so unknown inputs are caught there). This script
checks the rest: the structure of a composite action, that every output points at a step that
exists, that inputs reach scripts only through `env:` (no `${{ }}` inside `run:`, against
script injection), and shellcheck on every `run:` script when shellcheck is given.
Usage: check_action.py action.yml [SHELLCHECK]
"""
import re
import subprocess
import sys
import tempfile

import yaml

path = sys.argv[1]
shellcheck = sys.argv[2] if len(sys.argv) > 2 else None
errors = []
with open(path) as f:
    action = yaml.safe_load(f)

for key in ("name", "description", "inputs", "runs"):
    if key not in action:
        errors.append(f"missing top-level key {key!r}")
runs = action.get("runs", {})
if runs.get("using") != "composite":
    errors.append("runs.using is not 'composite'")
steps = runs.get("steps") or []
ids = {s["id"] for s in steps if "id" in s}
# One of traces (a check) and sweep (a sweep of verdicts), and with traces one of baseline and
# baselines, checked by .github/check.sh: none is required alone.
for name in ("traces", "sweep", "expect", "baseline", "baselines"):
    if name not in action.get("inputs", {}):
        errors.append(f"input {name!r} is missing")
# Every input reaches a step: through env: as ${{ inputs.NAME }} (or github-token's use).
text = open(path).read()
for name in action.get("inputs", {}):
    if "${{ inputs." + name + " }}" not in text:
        errors.append(f"input {name!r} is never used")
for name, inp in action.get("inputs", {}).items():
    if "description" not in inp:
        errors.append(f"input {name!r} has no description")
for name, out in action.get("outputs", {}).items():
    m = re.fullmatch(r"\$\{\{ steps\.([\w-]+)\.outputs\.[\w-]+ \}\}", str(out.get("value", "")))
    if not m or m.group(1) not in ids:
        errors.append(f"output {name!r} does not point at a step output: {out.get('value')!r}")
for i, step in enumerate(steps):
    where = f"step {i + 1} ({step.get('name', step.get('uses', '?'))})"
    if ("run" in step) == ("uses" in step):
        errors.append(f"{where}: needs exactly one of run and uses")
    if "run" in step:
        if "shell" not in step:
            errors.append(f"{where}: a composite run step needs shell")
        if "${{" in step["run"]:
            errors.append(f"{where}: expression inside run: pass it through env: instead")
        if shellcheck:
            with tempfile.NamedTemporaryFile("w", suffix=".sh") as script:
                script.write("#!/usr/bin/env bash\n" + step["run"])
                script.flush()
                r = subprocess.run([shellcheck, "-s", "bash", script.name],
                                   capture_output=True, text=True)
                if r.returncode != 0:
                    errors.append(f"{where}: shellcheck:\n{r.stdout}{r.stderr}")
for e in errors:
    print(f"{path}: {e}", file=sys.stderr)
sys.exit(1 if errors else 0)
