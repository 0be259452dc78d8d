#!/usr/bin/env python3
"""Fails when modules of src/ depend on each other in a cycle (top-level modules, and the
sibling files inside one).

A module's dependencies are the `crate::<module>` paths its files name. Run from the repository
root: `python3 .ci/module_cycles.py`; it prints the graph's cycles, or "no module cycle".
"""
import pathlib
import re
import sys

SRC = pathlib.Path("src")
USE = re.compile(r"crate::([a-z_]+)(?:::([a-z_]+))?")
SUPER = re.compile(r"super::([a-z_]+)")


def module_of(path: pathlib.Path) -> tuple[str, str | None]:
    parts = path.relative_to(SRC).with_suffix("").parts
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


def main() -> int:
    tops = {p.stem if p.is_file() else p.name for p in SRC.iterdir()} - {"lib", "main"}
    edges: dict[str, set[str]] = {}
    for path in SRC.rglob("*.rs"):
        if path.stem == "tests" or path.name in ("lib.rs", "main.rs"):
            continue
        text = path.read_text()
        # Unit tests may reach anywhere; only the code counts.
        text = text.split("#[cfg(test)]")[0]
        top, sub = module_of(path)
        src = f"{top}::{sub}" if sub else top
        for m in USE.finditer(text):
            dst_top, dst_sub = m.group(1), m.group(2)
            if dst_top not in tops:
                continue
            if dst_top != top:
                edges.setdefault(top, set()).add(dst_top)
            elif dst_sub and sub and dst_sub != sub and (SRC / top / f"{dst_sub}.rs").exists():
                edges.setdefault(src, set()).add(f"{top}::{dst_sub}")
        if sub:
            for m in SUPER.finditer(text):
                if m.group(1) != sub and (SRC / top / f"{m.group(1)}.rs").exists():
                    edges.setdefault(src, set()).add(f"{top}::{m.group(1)}")
    cycles = strongly_connected(edges)
    for members in cycles:
        print("cycle: " + " <-> ".join(members))
    if cycles:
        return 1
    print(f"no module cycle ({sum(len(v) for v in edges.values())} edges)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
