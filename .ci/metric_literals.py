#!/usr/bin/env python3
"""Fails when a metric's name is written as a string literal in src/ outside the registry
(issue 28: a metric is named in one place, `MetricId::name` in src/metrics/def.rs; everything
else says `MetricId::X.name()`).

The names are read from the registry's source: the arms `MetricId::X => "name"` of
`MetricId::name` in src/metrics/def.rs (and their count is checked against `MetricId::ALL`).
Every `.rs` under src/ is scanned except src/metrics/ and test code: `#[cfg(test)]` items
(inline `mod tests { ... }` blocks, also under `#[cfg(all(test, ...))]`) and files that are test
modules (`#[cfg(test)] mod tests;` in their parent, with everything below them). Comments are
skipped. A string literal (`"..."`, `r"..."`, `r#"..."#`, `b"..."`) fails when it holds a name as
a whole word: `_` is a word character, so `whole_trace_comm_pct` does not name `comm_pct`.

Run from the repository root: `python3 .ci/metric_literals.py` prints `file:line: literal` for
each offender and exits 1 if there is any, 0 if none, 2 if the registry cannot be read.
`python3 .ci/metric_literals.py --self-test` runs the check on built-in cases and exits 1 if
it judges any of them wrong.
"""
import pathlib
import re
import sys
import tempfile

REGISTRY = pathlib.Path("src/metrics")
NAME_FN = re.compile(r"pub\s+const\s+fn\s+name\s*\(\s*self\s*\)[^{]*\{(.*?)\n    \}", re.S)
NAME_ARM = re.compile(r"MetricId::(\w+)\s*=>\s*\"([a-z0-9_]+)\"")
ALL_LEN = re.compile(r"pub\s+const\s+ALL\s*:\s*\[\s*MetricId\s*;\s*(\d+)\s*\]")
# `#[cfg(test)]` or `#[cfg(all(..., test, ...))]` (not `not(test)`, not `any(...)`).
CFG_TEST = re.compile(r"#\[cfg\((?:test|all\([^()]*\btest\b[^()]*\))\)\]")
ATTRIBUTE = re.compile(r"\s*#\[[^\]]*\]")
RAW = re.compile(r"b?r(#*)\"")
CHAR = re.compile(r"'(?:\\(?:u\{[0-9a-fA-F]*\}|x[0-9a-fA-F]{2}|.)|[^\\'\n])'")
MOD_DECL = re.compile(r"\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;")


class RegistryError(Exception):
    pass


def metric_names(root: pathlib.Path) -> list[str]:
    """The names `MetricId::name` returns, read from src/metrics/def.rs."""
    path = root / REGISTRY / "def.rs"
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise RegistryError(f"{path}: cannot read the registry: {e}") from e
    body = NAME_FN.search(text)
    if not body:
        raise RegistryError(f"{path}: no `pub const fn name(self)` (MetricId::name) found")
    names = [name for _, name in NAME_ARM.findall(body.group(1))]
    if not names:
        raise RegistryError(f"{path}: MetricId::name has no `MetricId::X => \"name\"` arm")
    size = ALL_LEN.search(text)
    if size and int(size.group(1)) != len(names):
        raise RegistryError(
            f"{path}: MetricId::ALL has {size.group(1)} metrics but MetricId::name {len(names)} "
            "names: the check cannot read the registry"
        )
    return names


def lex(text: str) -> tuple[str, list[tuple[int, int, int]]]:
    """The code with comments and literals blanked out (newlines kept, so offsets and lines
    stay), and the string literals as (start, end, content start) offsets."""
    code = list(text)
    strings = []
    n, i = len(text), 0

    def blank(a: int, b: int) -> None:
        for k in range(a, b):
            if code[k] != "\n":
                code[k] = " "

    while i < n:
        c = text[i]
        if text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            blank(i, end)
            i = end
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            blank(i, j)
            i = j
        elif (m := RAW.match(text, i)) and not _ident_before(text, i):
            close = '"' + m.group(1)
            end = text.find(close, m.end())
            end = n if end < 0 else end + len(close)
            strings.append((i, end, m.end()))
            blank(i, end)
            i = end
        elif c == '"' or (text.startswith('b"', i) and not _ident_before(text, i)):
            j = i + (2 if c == "b" else 1)
            start = j
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            end = min(j + 1, n)
            strings.append((i, end, start))
            blank(i, end)
            i = end
        elif c == "'":
            # A char literal ('x', '\n', '\u{..}', '"') or a lifetime ('a).
            m = CHAR.match(text, i)
            if m:
                blank(i, m.end())
                i = m.end()
            else:
                i += 1
        elif c.isalnum() or c == "_":
            j = i
            while j < n and (text[j].isalnum() or text[j] == "_"):
                j += 1
            # A word: `r"`, `b"` and `br"` at a word's start were taken as literals above.
            i = j
        else:
            i += 1
    return "".join(code), strings


def _ident_before(text: str, i: int) -> bool:
    return i > 0 and (text[i - 1].isalnum() or text[i - 1] == "_")


def test_spans(code: str) -> list[tuple[int, int]]:
    """Spans of the items under `#[cfg(test)]` in comment- and literal-free `code`: from the
    attribute to the item's closing brace (or `;` for a declaration)."""
    spans = []
    for m in CFG_TEST.finditer(code):
        i = m.end()
        while a := ATTRIBUTE.match(code, i):
            i = a.end()
        brace, semi = code.find("{", i), code.find(";", i)
        if brace < 0 or (0 <= semi < brace):
            spans.append((m.start(), len(code) if semi < 0 else semi + 1))
            continue
        depth, j = 0, brace
        while j < len(code):
            if code[j] == "{":
                depth += 1
            elif code[j] == "}":
                depth -= 1
                if depth == 0:
                    break
            j += 1
        spans.append((m.start(), j + 1))
    return spans


def test_module_dirs(src: pathlib.Path) -> list[pathlib.Path]:
    """For each `#[cfg(test)] mod name;`: its file's path without `.rs` (covering `name.rs`,
    `name/mod.rs` and everything below `name/`)."""
    out = []
    for path in src.rglob("*.rs"):
        code, _ = lex(path.read_text(encoding="utf-8"))
        base = path.parent if path.name in ("mod.rs", "lib.rs", "main.rs") else path.with_suffix("")
        for m in CFG_TEST.finditer(code):
            i = m.end()
            while a := ATTRIBUTE.match(code, i):
                i = a.end()
            if d := MOD_DECL.match(code, i):
                out.append(base / d.group(1))
    return out


def in_test_module(path: pathlib.Path, dirs: list[pathlib.Path]) -> bool:
    stem = path.with_suffix("") if path.name != "mod.rs" else path.parent
    return any(stem == d or d in stem.parents for d in dirs)


def offenders(text: str, names: list[str]) -> list[tuple[int, str]]:
    """(line, literal as written) for each literal outside test code that holds a name."""
    word = re.compile(r"(?<![A-Za-z0-9_])(?:" + "|".join(map(re.escape, names)) + r")(?![A-Za-z0-9_])")
    code, strings = lex(text)
    spans = test_spans(code)
    found = []
    for start, end, body in strings:
        if any(a <= start < b for a, b in spans):
            continue
        m = word.search(text, body, end)
        if m:
            literal = text[start:end]
            shown = literal if len(literal) <= 120 else literal[:117] + "..."
            found.append((text.count("\n", 0, m.start()) + 1, shown.replace("\n", "\\n")))
    return found


def scan(root: pathlib.Path) -> list[str]:
    names = metric_names(root)
    src = root / "src"
    dirs = test_module_dirs(src)
    problems = []
    for path in sorted(src.rglob("*.rs")):
        rel = path.relative_to(root)
        if rel.is_relative_to(REGISTRY) or in_test_module(path, dirs):
            continue
        for line, literal in offenders(path.read_text(encoding="utf-8"), names):
            problems.append(f"{rel.as_posix()}:{line}: {literal}")
    return problems


REGISTRY_FIXTURE = """
impl MetricId {
    pub const ALL: [MetricId; 2] = [MetricId::CommPct, MetricId::DecodeStepMs];
    pub const fn name(self) -> &'static str {
        match self {
            MetricId::CommPct => "comm_pct",
            MetricId::DecodeStepMs => "decode_step_ms",
        }
    }
}
"""

# (what, files under src/ besides the registry, how many offenders the check must report)
CASES = [
    ("a plain literal", {"a.rs": 'fn f() -> &str { "x (comm_pct)" }\n'}, 1),
    ("a raw literal", {"a.rs": 'fn f() -> &str { r#"the "comm_pct" figure"# }\n'}, 1),
    ("a raw literal without hashes", {"a.rs": 'fn f() -> &str { r"decode_step_ms" }\n'}, 1),
    ("a literal over two lines", {"a.rs": 'const S: &str = "a \\\n  comm_pct";\n'}, 1),
    ("a byte literal", {"a.rs": 'const S: &[u8] = b"comm_pct";\n'}, 1),
    ("a literal after a `'\"'` char", {"a.rs": "fn f(c: char) -> bool { c == '\"' && g(\"comm_pct\") }\n"}, 1),
    ("a literal after a lifetime", {"a.rs": "fn f<'a>(x: &'a str) -> &'a str { \"comm_pct\" }\n"}, 1),
    ("two literals", {"a.rs": 'const A: &str = "comm_pct";\nconst B: &str = "decode_step_ms";\n'}, 2),
    (
        "code after a test module",
        {"a.rs": '#[cfg(test)]\nmod tests {\n    fn t() { let _ = "}"; }\n}\nconst S: &str = "comm_pct";\n'},
        1,
    ),
    (
        "an inline test module",
        {"a.rs": '#[cfg(test)]\nmod tests {\n    #[test]\n    fn t() { assert_eq!(f(), "comm_pct"); }\n}\n'},
        0,
    ),
    (
        "a test module under cfg(all(test, unix))",
        {"a.rs": '#[cfg(all(test, unix))]\n#[allow(dead_code)]\nmod tests { const S: &str = "comm_pct"; }\n'},
        0,
    ),
    (
        "a test module in its own file",
        {
            "x/mod.rs": "#[cfg(test)]\nmod tests;\n",
            "x/tests.rs": 'const S: &str = "comm_pct";\n',
            "x/tests/more.rs": 'const S: &str = "comm_pct";\n',
        },
        0,
    ),
    ("a not(test) item", {"a.rs": '#[cfg(not(test))]\nconst S: &str = "comm_pct";\n'}, 1),
    ("a line comment", {"a.rs": '// prints "comm_pct"\n/// the "decode_step_ms" of a run\nfn f() {}\n'}, 0),
    ("a block comment", {"a.rs": '/* "comm_pct" /* nested */ "comm_pct" */\nfn f() {}\n'}, 0),
    ("a longer word", {"a.rs": 'const S: &str = "whole_trace_comm_pct comm_pct_x decode_step_ms2";\n'}, 0),
    ("an identifier", {"a.rs": "fn f() { let comm_pct = decode_step_ms; }\n"}, 0),
    ("the registry itself", {"metrics/catalog.rs": 'const S: &str = "comm_pct";\n'}, 0),
]


def self_test() -> int:
    wrong = 0
    for what, files, expected in CASES:
        with tempfile.TemporaryDirectory() as tmp:
            root = pathlib.Path(tmp)
            for rel, text in {"metrics/def.rs": REGISTRY_FIXTURE, **files}.items():
                (root / "src" / rel).parent.mkdir(parents=True, exist_ok=True)
                (root / "src" / rel).write_text(text, encoding="utf-8")
            found = scan(root)
        if len(found) != expected:
            wrong += 1
            print(f"self-test: {what}: expected {expected} offenders, found {len(found)}: {found}")
    with tempfile.TemporaryDirectory() as tmp:
        root = pathlib.Path(tmp)
        (root / "src/metrics").mkdir(parents=True)
        (root / "src/metrics/def.rs").write_text(REGISTRY_FIXTURE.replace("; 2]", "; 3]"), encoding="utf-8")
        try:
            scan(root)
            wrong += 1
            print("self-test: a registry whose ALL and name() disagree was read without error")
        except RegistryError:
            pass
    if wrong:
        print(f"self-test: {wrong} of {len(CASES) + 1} cases judged wrong")
        return 1
    print(f"self-test: {len(CASES) + 1} cases judged right")
    return 0


def main() -> int:
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    if sys.argv[1:]:
        print("usage: .ci/metric_literals.py [--self-test]", file=sys.stderr)
        return 2
    try:
        problems = scan(pathlib.Path("."))
    except RegistryError as e:
        print(e, file=sys.stderr)
        return 2
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} metric names written as literals outside src/metrics/ and tests; "
              "name them through MetricId::X.name()")
        return 1
    print("metric names are written only in the registry (src/metrics/) and in tests")
    return 0


if __name__ == "__main__":
    sys.exit(main())
