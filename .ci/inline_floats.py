#!/usr/bin/env python3
"""Fails when code in src/ formats a float inline (`{:.2}`, `{x:.3}`, `{:+.1}`, `{:>8.3}`,
`{v:.prec$}`) instead of going through src/units.rs, the one formatter (issue 29).

units.rs itself and test code are exempt: `#[cfg(test)]` modules, inline or in their own file
(`#[cfg(test)] mod tests;`), and tests/ (not scanned). Comments are skipped.

Run from the repository root: `python3 .ci/inline_floats.py [ALLOW_LIST]`. It prints file:line for
each inline float format found, then a summary. The allow-list (default .ci/inline_floats.allow)
names files whose offenders are known and being rewritten elsewhere, one `path count` a line
(`#` starts a comment): up to `count` offenders in `path` are reported but do not fail the check.
An empty allow-list is the goal.
"""
import pathlib
import re
import sys

SRC = pathlib.Path("src")
EXEMPT = {SRC / "units.rs"}
# A format spec with a precision: `{` [argument] `:` [fill/align] [sign] [#] [0] [width] `.` precision `}`.
SPEC = re.compile(
    r"(?<!\{)\{(?:[A-Za-z_][A-Za-z0-9_]*|\d+)?:(?:.?[<>^])?[+-]?#?0?(?:\d+|[A-Za-z_]\w*\$)?"
    r"\.(?:\d+|[A-Za-z_]\w*\$|\*)[a-zA-Z?]*\}"
)
TEST_MOD_FILE = re.compile(r"#\[cfg\(test\)\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;")
TEST_MOD_INLINE = re.compile(r"#\[cfg\(test\)\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+\w+\s*\{")


def test_files() -> set[pathlib.Path]:
    """Files that are test modules declared `#[cfg(test)] mod name;` by their parent."""
    out = set()
    for path in SRC.rglob("*.rs"):
        text = path.read_text(encoding="utf-8")
        base = path.parent if path.name in ("mod.rs", "lib.rs", "main.rs") else path.with_suffix("")
        for m in TEST_MOD_FILE.finditer(text):
            out.add(base / f"{m.group(1)}.rs")
            out.add(base / m.group(1) / "mod.rs")
    return out


def test_spans(text: str) -> list[tuple[int, int]]:
    """Character spans of inline `#[cfg(test)] mod x { ... }` blocks (brace-matched)."""
    spans = []
    for m in TEST_MOD_INLINE.finditer(text):
        depth, i = 0, m.end() - 1
        while i < len(text):
            if text[i] == "{":
                depth += 1
            elif text[i] == "}":
                depth -= 1
                if depth == 0:
                    break
            i += 1
        spans.append((m.start(), i))
    return spans


def offenders(path: pathlib.Path) -> list[tuple[int, str]]:
    text = path.read_text(encoding="utf-8")
    spans = test_spans(text)
    found = []
    offset = 0
    for number, line in enumerate(text.splitlines(keepends=True), 1):
        start = offset
        offset += len(line)
        if any(a <= start <= b for a, b in spans):
            continue
        code = line.split("//", 1)[0] if line.lstrip().startswith("//") else line
        if line.lstrip().startswith("//"):
            continue
        if SPEC.search(code):
            found.append((number, line.strip()))
    return found


def read_allow(path: pathlib.Path) -> dict[str, int]:
    allow: dict[str, int] = {}
    if not path.exists():
        return allow
    for n, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split()
        if len(parts) != 2 or not parts[1].isdigit():
            sys.exit(f"{path}:{n}: expected `path count`, got {raw!r}")
        allow[parts[0]] = int(parts[1])
    return allow


def main() -> int:
    allow_path = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".ci/inline_floats.allow")
    allow = read_allow(allow_path)
    skip = EXEMPT | test_files()
    failed = allowed = 0
    for path in sorted(SRC.rglob("*.rs")):
        if path in skip:
            continue
        found = offenders(path)
        if not found:
            continue
        limit = allow.get(path.as_posix(), 0)
        over = len(found) > limit
        for number, line in found:
            tag = "" if over else " (allow-listed)"
            print(f"{path.as_posix()}:{number}: inline float format{tag}: {line}")
        if over:
            failed += len(found)
            if limit:
                print(f"{path.as_posix()}: {len(found)} inline float formats, allow-list says {limit}")
        else:
            allowed += len(found)
    stale = [p for p in allow if not pathlib.Path(p).exists()]
    for p in stale:
        print(f"{allow_path}: {p} does not exist; remove it from the allow-list")
    if failed or stale:
        print(f"inline float formats outside src/units.rs: {failed} not allowed, {allowed} allow-listed; "
              "format numbers through src/units.rs")
        return 1
    print(f"no inline float format outside src/units.rs ({allowed} allow-listed in {allow_path})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
