#!/usr/bin/env python3
"""Fails when modules of src/ depend on each other in a cycle (top-level modules, and the
sibling files inside one).

A module's dependencies are the `crate::<module>` paths its files name (`crate::{a, b::c}`
groups too), and for a sibling file the `super::<sibling>` paths. Whole files are read, without
comments, string literals and test code, as .ci/layers.py reads them: the items under
`#[cfg(test)]` left out by brace matching (a `#[cfg(test)] mod tests;` declaration is that item
only, the code after it is read), and the files of test modules.

Run from the repository root: `python3 .ci/module_cycles.py`; it prints the graph's cycles, or
"no module cycle". `python3 .ci/module_cycles.py --self-test` runs it on built-in cases and exits
1 if it judges any of them wrong.
"""
import pathlib
import re
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from layers import GROUP, code_of, group_names  # noqa: E402
from metric_literals import in_test_module, test_module_dirs  # noqa: E402

USE = re.compile(r"\bcrate\s*::\s*([a-z_]+)(?:\s*::\s*([a-z_]+))?")
SUPER = re.compile(r"\bsuper\s*::\s*([a-z_]+)")


def module_of(src: pathlib.Path, path: pathlib.Path) -> tuple[str, str | None]:
    parts = path.relative_to(src).with_suffix("").parts
    top = parts[0]
    sub = parts[1] if len(parts) > 1 and parts[1] not in ("mod", "tests") else None
    return top, sub


def strongly_connected(edges: dict[str, set[str]]) -> list[list[str]]:
    """Groups of two or more modules that reach each other (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in sorted(set(edges) | {w for ws in edges.values() for w in ws}):
        if v not in index:
            visit(v)
    return groups


def crate_paths(code: str) -> list[tuple[str, str | None]]:
    """(module, item or submodule) for every `crate::` path of `code`, groups opened."""
    paths = [(m.group(1), m.group(2)) for m in USE.finditer(code)]
    for m in GROUP.finditer(code):
        for at, name in group_names(code, m.end() - 1):
            sub = re.compile(r"[a-z_]+\s*::\s*([a-z_]+)").match(code, at)
            paths.append((name, sub.group(1) if sub else None))
    return paths


def edges_of(root: pathlib.Path) -> dict[str, set[str]]:
    src = root / "src"
    tops = {p.stem if p.is_file() else p.name for p in src.iterdir()} - {"lib", "main"}
    tests = test_module_dirs(src)
    edges: dict[str, set[str]] = {}
    for path in sorted(src.rglob("*.rs")):
        if path.stem == "tests" or path.name in ("lib.rs", "main.rs") or in_test_module(path, tests):
            continue
        # Unit tests may reach anywhere; only the code counts.
        code = code_of(path.read_text(encoding="utf-8"))
        top, sub = module_of(src, path)
        here = f"{top}::{sub}" if sub else top
        for dst_top, dst_sub in crate_paths(code):
            if dst_top not in tops:
                continue
            if dst_top != top:
                edges.setdefault(top, set()).add(dst_top)
            elif dst_sub and sub and dst_sub != sub and (src / top / f"{dst_sub}.rs").exists():
                edges.setdefault(here, set()).add(f"{top}::{dst_sub}")
        if sub:
            for m in SUPER.finditer(code):
                if m.group(1) != sub and (src / top / f"{m.group(1)}.rs").exists():
                    edges.setdefault(here, set()).add(f"{top}::{m.group(1)}")
    return edges


# (what, files under src/, the cycles the check must report)
CASES = [
    ("two modules naming each other", {"a.rs": "use crate::b;\n", "b.rs": "use crate::a;\n"}, [["a", "b"]]),
    ("one way", {"a.rs": "use crate::b;\n", "b.rs": "\n"}, []),
    (
        "a back edge after `#[cfg(test)] mod tests;` at the top",
        {"a/mod.rs": "#[cfg(test)]\nmod tests;\nuse crate::b;\n", "a/tests.rs": "", "b.rs": "use crate::a::X;\n"},
        [["a", "b"]],
    ),
    (
        "a back edge after an inline test module",
        {"a.rs": "use crate::b;\n", "b.rs": '#[cfg(test)]\nmod tests { fn t() { let _ = "{"; } }\nfn f() { crate::a::g() }\n'},
        [["a", "b"]],
    ),
    (
        "a back edge inside a test module",
        {"a.rs": "use crate::b;\n", "b.rs": "#[cfg(test)]\nmod tests {\n    use crate::a;\n}\n"},
        [],
    ),
    (
        "a back edge in a test module's own file",
        {"a.rs": "use crate::b;\n", "b/mod.rs": "#[cfg(test)]\nmod checks;\n", "b/checks.rs": "use crate::a;\n"},
        [],
    ),
    (
        "a back edge in a comment or a literal",
        {"a.rs": "use crate::b;\n", "b.rs": '// crate::a\nconst S: &str = "crate::a";\n'},
        [],
    ),
    (
        "a back edge in a group",
        {"a.rs": "use crate::b;\n", "b.rs": "use crate::{\n    text,\n    a::X,\n};\n", "text.rs": ""},
        [["a", "b"]],
    ),
    (
        "siblings through super::",
        {"m/mod.rs": "mod x;\nmod y;\n", "m/x.rs": "use super::y::Y;\n", "m/y.rs": "fn f() { super::x::g() }\n"},
        [["m::x", "m::y"]],
    ),
]


def self_test() -> int:
    wrong = 0
    for what, files, expected in CASES:
        with tempfile.TemporaryDirectory() as tmp:
            root = pathlib.Path(tmp)
            for rel, text in files.items():
                (root / "src" / rel).parent.mkdir(parents=True, exist_ok=True)
                (root / "src" / rel).write_text(text, encoding="utf-8")
            found = strongly_connected(edges_of(root))
        if found != expected:
            wrong += 1
            print(f"self-test: {what}: expected cycles {expected}, found {found}")
    if wrong:
        print(f"self-test: {wrong} of {len(CASES)} cases judged wrong")
        return 1
    print(f"self-test: {len(CASES)} cases judged right")
    return 0


def main() -> int:
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    if sys.argv[1:]:
        print("usage: .ci/module_cycles.py [--self-test]", file=sys.stderr)
        return 2
    edges = edges_of(pathlib.Path("."))
    cycles = strongly_connected(edges)
    for members in cycles:
        print("cycle: " + " <-> ".join(members))
    if cycles:
        return 1
    print(f"no module cycle ({sum(len(v) for v in edges.values())} edges)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
