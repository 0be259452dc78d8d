#!/usr/bin/env python3
"""Fails when src/ breaks the layering rules of docs/ARCHITECTURE.md that can be checked by
reading the code: which module may name which (`crate::<module>` paths in code, not comments or
unit tests), and who writes to stdout and stderr.

1. The command line (`src/cli/`) calls only `pipeline`, `report`, `github`, `units` and `exit`,
   plus three modules that are the command line's own concern: `output` (every write to stdout
   and stderr), `confine` (the paths a workflow input may name) and `text` (outside text shown
   escaped in what it prints).
2. The stages run one way: a stage names only the stages before it (reader, taxonomy, steps,
   metrics, analysis, baseline, gate, report, github), and the helpers at their place in that
   order; `pipeline` names no renderer, no GitHub code and no command line (it parses no
   argument and prints nothing), and no library module names `cli`.
3. The shared modules (`text`, `stats`, `units`, `exit`, `files`, then `output` and `confine`,
   which use the first five) name no stage: every stage may use them, so they may use none.
4. Only `output` writes to stdout or stderr (`print!`, `println!`, `eprint!`, `eprintln!`,
   `dbg!` anywhere else in the library's code).

Run from the repository root: `python3 .ci/layers.py`. It prints every offending path with its
file and line, or "layers hold".
"""
import pathlib
import re
import sys

SRC = pathlib.Path("src")
USE = re.compile(r"\bcrate::([a-z_]+)")
GROUP = re.compile(r"\bcrate::\{([^}]*)\}")
PRINT = re.compile(r"\b(e?print(?:ln)?|dbg)!\s*\(")

CLI_MAY_NAME = {"pipeline", "report", "github", "units", "exit", "output", "confine", "text"}

# Lowest first. A module may name modules of a lower rank only (or its own); shared modules
# rank below every stage. `testing` (helpers for the test suite) and `lib`/`main` are not
# checked.
SHARED = ["text", "stats", "units", "exit", "files", "output", "confine"]
ORDER = [
    SHARED[:5],
    SHARED[5:],
    ["reader"],
    ["links", "identity"],
    ["taxonomy"],
    ["steps"],
    ["inspect"],
    ["metrics"],
    # The synthetic generator: its truth is keyed by the registry's `MetricId` (names only; it
    # computes every figure itself), so it sits just above `metrics`.
    ["synth"],
    ["analysis"],
    ["baseline"],
    ["gate"],
    ["sweep"],
    ["pipeline"],
    ["report"],
    ["github"],
    ["cli"],
]
RANK = {m: i for i, group in enumerate(ORDER) for m in group}
# `pipeline` ranks below the renderers so that it never names them; the command line names it.
NOT_CHECKED = {"lib", "main", "testing"}


def code_of(text: str) -> list[tuple[int, str]]:
    """The lines of code before the unit tests, without comments: (line number, text)."""
    text = text.split("#[cfg(test)]")[0]
    lines = []
    for number, line in enumerate(text.splitlines(), 1):
        line = re.sub(r"//.*", "", line)
        lines.append((number, line))
    return lines


def main() -> int:
    tops = {p.stem if p.is_file() else p.name for p in SRC.iterdir()} - {"lib", "main"}
    problems = []
    for path in sorted(SRC.rglob("*.rs")):
        top = path.relative_to(SRC).parts[0].removesuffix(".rs")
        if top in NOT_CHECKED or path.stem == "tests":
            continue
        lines = code_of(path.read_text())
        code = "\n".join(line for _, line in lines)
        # (line number, module) for every crate path, `crate::{a, b::c}` groups over lines too.
        found = [(code.count("\n", 0, m.start()) + 1, m.group(1)) for m in USE.finditer(code)]
        for m in GROUP.finditer(code):
            at = code.count("\n", 0, m.start()) + 1
            found += [(at, name) for name in re.findall(r"(?:^|,)\s*([a-z_]+)", m.group(1))]
        for number, line in lines:
            where = f"{path}:{number}"
            named = [dst for at, dst in found if at == number]
            for dst in named:
                if dst not in tops or dst == top:
                    continue
                if top == "cli" and dst not in CLI_MAY_NAME:
                    problems.append(
                        f"{where}: the command line names crate::{dst}; it calls only "
                        f"{', '.join(sorted(CLI_MAY_NAME))} (go through pipeline)"
                    )
                elif top != "cli" and dst in RANK and top in RANK and RANK[dst] >= RANK[top]:
                    what = "a shared module" if top in SHARED else "a lower layer"
                    problems.append(
                        f"{where}: {top} ({what}) names crate::{dst}, which comes after it"
                    )
                elif top not in RANK:
                    problems.append(f"{where}: {top} has no place in .ci/layers.py's ORDER")
            if top != "output" and PRINT.search(line):
                problems.append(f"{where}: prints directly; every write goes through output")
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} layering problems (docs/ARCHITECTURE.md)")
        return 1
    print("layers hold")
    return 0


if __name__ == "__main__":
    sys.exit(main())
