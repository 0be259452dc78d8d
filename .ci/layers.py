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

Whole files are read: comments and string literals are left out, and so is test code, by brace
matching: each item under `#[cfg(test)]` (or `#[cfg(all(test, ...))]`), an inline `mod tests {
... }` or a declaration `#[cfg(test)] mod tests;` (that item only: the code after it is read),
and the files such a declaration names, with everything below them. The lexer and the test-module
rules are .ci/metric_literals.py's.

Run from the repository root: `python3 .ci/layers.py`. It prints every offending path with its
file and line, or "layers hold". `python3 .ci/layers.py --self-test` runs the check on built-in
cases and exits 1 if it judges any of them wrong.
"""
import pathlib
import re
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from metric_literals import ATTRIBUTE, CFG_TEST, in_test_module, lex, test_module_dirs  # noqa: E402

USE = re.compile(r"\bcrate\s*::\s*([a-z_]+)")
GROUP = re.compile(r"\bcrate\s*::\s*\{")
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


def test_spans(code: str) -> list[tuple[int, int]]:
    """Spans of the items under `#[cfg(test)]` in comment- and literal-free `code`, from the
    attribute to the end of the item: its closing brace, or the `;` or `,` that ends it at its
    own depth (`mod tests;`, `use ...;`, a struct field), never a `;` inside brackets
    (`fn f() -> [u8; 2] { ... }`). A `#![cfg(test)]` file is all test code."""
    if "#![cfg(test)]" in code:
        return [(0, len(code))]
    spans = []
    for m in CFG_TEST.finditer(code):
        i = m.end()
        while a := ATTRIBUTE.match(code, i):
            i = a.end()
        depth, j, end = 0, i, len(code)
        while j < len(code):
            c = code[j]
            if c in "([":
                depth += 1
            elif c in ")]":
                if depth == 0:
                    end = j
                    break
                depth -= 1
            elif c == "}" and depth == 0:
                end = j  # the end of the enclosing block: the item had no end of its own
                break
            elif c in ";," and depth == 0:
                end = j + 1
                break
            elif c == "{" and depth == 0:
                level = 0
                while j < len(code):
                    if code[j] == "{":
                        level += 1
                    elif code[j] == "}":
                        level -= 1
                        if level == 0:
                            break
                    j += 1
                end = min(j + 1, len(code))
                break
            j += 1
        spans.append((m.start(), end))
    return spans


def code_of(text: str) -> str:
    """`text` without comments, literals and test items: each blanked out, newlines kept, so
    that offsets and line numbers stay those of the file."""
    code, _ = lex(text)
    chars = list(code)
    for a, b in test_spans(code):
        for k in range(a, b):
            if chars[k] != "\n":
                chars[k] = " "
    return "".join(chars)


def group_names(code: str, start: int) -> list[tuple[int, str]]:
    """The first segment of each path in the `crate::{...}` group whose `{` is at `start`, with
    its offset: `crate::{a, b::{c, d}, e}` names a, b and e (not c and d, which are inside b)."""
    names, depth, expect, i = [], 0, True, start
    while i < len(code):
        c = code[i]
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                break
        elif c == "," and depth == 1:
            expect = True
        elif depth == 1 and expect and (c.isalpha() or c == "_"):
            m = re.compile(r"[A-Za-z_][A-Za-z0-9_]*").match(code, i)
            names.append((i, m.group(0)))
            expect = False
            i = m.end()
            continue
        i += 1
    return names


def scan(root: pathlib.Path) -> list[str]:
    src = root / "src"
    tops = {p.stem if p.is_file() else p.name for p in src.iterdir()} - {"lib", "main"}
    tests = test_module_dirs(src)
    problems = []
    for path in sorted(src.rglob("*.rs")):
        rel = path.relative_to(root).as_posix()
        top = path.relative_to(src).parts[0].removesuffix(".rs")
        if top in NOT_CHECKED or path.stem == "tests" or in_test_module(path, tests):
            continue
        code = code_of(path.read_text(encoding="utf-8"))
        line_of = lambda offset: code.count("\n", 0, offset) + 1  # noqa: E731
        # (line number, module) for every crate path, `crate::{a, b::c}` groups over lines too.
        found = [(line_of(m.start()), m.group(1)) for m in USE.finditer(code)]
        for m in GROUP.finditer(code):
            found += [(line_of(at), name) for at, name in group_names(code, m.end() - 1)]
        for number, dst in sorted(found):
            where = f"{rel}:{number}"
            if dst not in tops or dst == top:
                continue
            if top == "cli" and dst not in CLI_MAY_NAME:
                problems.append(
                    f"{where}: the command line names crate::{dst}; it calls only "
                    f"{', '.join(sorted(CLI_MAY_NAME))} (go through pipeline)"
                )
            elif top != "cli" and dst in RANK and top in RANK and RANK[dst] >= RANK[top]:
                what = "a shared module" if top in SHARED else "a lower layer"
                problems.append(f"{where}: {top} ({what}) names crate::{dst}, which comes after it")
            elif top not in RANK:
                problems.append(f"{where}: {top} has no place in .ci/layers.py's ORDER")
        if top != "output":
            for m in PRINT.finditer(code):
                problems.append(
                    f"{rel}:{line_of(m.start())}: prints directly; every write goes through output"
                )
    return problems


# (what, files under src/, how many problems the check must report)
CASES = [
    ("the command line naming a stage", {"cli/mod.rs": "use crate::metrics::X;\n"}, 1),
    ("the command line naming pipeline", {"cli/mod.rs": "use crate::pipeline::X;\n"}, 0),
    ("a stage naming a later one", {"reader/mod.rs": "fn f() { crate::gate::g() }\n"}, 1),
    ("a stage naming an earlier one", {"gate/mod.rs": "fn f() { crate::reader::g() }\n"}, 0),
    ("a shared module naming a stage", {"text.rs": "use crate::reader;\n"}, 1),
    (
        "code after `#[cfg(test)] mod tests;` at the top",
        {"cli/mod.rs": "#[cfg(test)]\nmod tests;\n\nuse crate::metrics::X;\n", "cli/tests.rs": "use crate::gate;\n"},
        1,
    ),
    (
        "code after an inline test module",
        {"reader/mod.rs": '#[cfg(test)]\nmod tests {\n    fn t() { let _ = "}"; crate::gate::g(); }\n}\nuse crate::report;\n'},
        1,
    ),
    (
        "an inline test module",
        {"reader/mod.rs": "#[cfg(test)]\n#[allow(dead_code)]\nmod tests {\n    use crate::gate;\n    fn t() { println!(); }\n}\n"},
        0,
    ),
    (
        "a test module under cfg(all(test, unix))",
        {"reader/mod.rs": "#[cfg(all(test, unix))]\nmod unix_tests { use crate::gate; }\n"},
        0,
    ),
    (
        "a test module in a file of another name, and what is below it",
        {
            "reader/mod.rs": "#[cfg(test)]\nmod fast_tests;\n",
            "reader/fast_tests.rs": "use crate::gate;\n",
            "reader/fast_tests/more.rs": "use crate::gate;\n",
        },
        0,
    ),
    (
        "a test function with `;` inside brackets, then code",
        {"reader/mod.rs": "#[cfg(test)]\nfn f() -> [u8; 2] { crate::gate::g() }\nfn h() { crate::gate::g() }\n"},
        1,
    ),
    (
        "a test-only struct field, then code",
        {"reader/mod.rs": "struct S {\n    #[cfg(test)]\n    x: crate::gate::G,\n    y: u8,\n}\nuse crate::gate;\n"},
        1,
    ),
    (
        "a test-only use, then code",
        {"reader/mod.rs": "#[cfg(test)]\nuse crate::gate;\nuse crate::report;\n"},
        1,
    ),
    ("a not(test) item", {"reader/mod.rs": "#[cfg(not(test))]\nuse crate::gate;\n"}, 1),
    (
        "comments and literals",
        {"reader/mod.rs": '// crate::gate\n/* crate::gate /* println!() */ */\nconst S: &str = "crate::gate println!(x)";\n'},
        0,
    ),
    (
        "a nested group: its inner names are not modules of the crate",
        {"reader/mod.rs": "use crate::{text, units::{self, gate}};\n", "units.rs": ""},
        0,
    ),
    (
        "a group naming a later stage on its second line",
        {"reader/mod.rs": "use crate::{\n    text,\n    gate::X,\n};\n"},
        1,
    ),
    ("printing outside output", {"reader/mod.rs": "fn f() { eprintln!(\"x\"); }\n"}, 1),
    ("printing in output", {"output.rs": "fn f() { print!(\"x\"); }\n"}, 0),
]
# Modules every case's tree has (empty), so that `crate::x` names a module of the crate.
MODULES = ["cli/mod.rs", "reader/mod.rs", "gate/mod.rs", "report/mod.rs", "metrics/mod.rs",
           "pipeline.rs", "text.rs", "output.rs"]


def self_test() -> int:
    wrong = 0
    for what, files, expected in CASES:
        with tempfile.TemporaryDirectory() as tmp:
            root = pathlib.Path(tmp)
            for rel, text in {**{m: "" for m in MODULES}, **files}.items():
                (root / "src" / rel).parent.mkdir(parents=True, exist_ok=True)
                (root / "src" / rel).write_text(text, encoding="utf-8")
            found = scan(root)
        if len(found) != expected:
            wrong += 1
            print(f"self-test: {what}: expected {expected} problems, found {len(found)}: {found}")
    if wrong:
        print(f"self-test: {wrong} of {len(CASES)} cases judged wrong")
        return 1
    print(f"self-test: {len(CASES)} cases judged right")
    return 0


def main() -> int:
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    if sys.argv[1:]:
        print("usage: .ci/layers.py [--self-test]", file=sys.stderr)
        return 2
    problems = scan(pathlib.Path("."))
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} layering problems (docs/ARCHITECTURE.md)")
        return 1
    print("layers hold")
    return 0


if __name__ == "__main__":
    sys.exit(main())
