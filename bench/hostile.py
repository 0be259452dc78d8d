#!/usr/bin/env python3
"""Writes the full-size hostile inputs of issue 21, cases 5-9, and of issue 27, D6 (renames of
huge names), into DIR (see bench/hostile.sh).

usage: hostile.py DIR TRACEGATE [CASE ...]   (CASE: small, names, pooled, calls, renames; default all)
Files are streamed to disk, never built in memory: 2 GiB strings are written in 1 MiB pieces.
"""
import gzip
import json
import os
import re
import subprocess
import sys

MIB = 1 << 20


def tiny(path, distributed=None, name="k", args="", top=""):
    dist = f'"distributedInfo": {json.dumps(distributed)}, ' if distributed else ""
    with open(path, "w") as f:
        f.write("{" + dist + top + '"traceEvents": [{"ph": "X", "cat": "kernel", "name": "' + name
                + '", "pid": 0, "tid": 7, "ts": 1, "dur": 1, "args": {"stream": 7' + args + "}}]}")


def long_string(f, size, byte=b"a"):
    piece = byte * MIB
    for _ in range(size // MIB):
        f.write(piece)
    f.write(byte * (size % MIB))


def huge(path, size, where):
    """One kernel whose name (where=name), args string (args) or an unknown top-level key (top)
    is `size` bytes long."""
    with open(path, "wb") as f:
        f.write(b"{")
        if where == "top":
            f.write(b'"junk": "')
            long_string(f, size, b"j")
            f.write(b'", ')
        f.write(b'"traceEvents": [{"ph": "X", "cat": "kernel", "name": "')
        if where == "name":
            long_string(f, size)
        else:
            f.write(b"k")
        f.write(b'", "pid": 0, "tid": 7, "ts": 1, "dur": 1, "args": {"stream": 7')
        if where == "args":
            f.write(b', "note": "')
            long_string(f, size, b"n")
            f.write(b'"')
        f.write(b'}}, {"ph": "X", "cat": "kernel", "name": "k2", "pid": 0, "tid": 7, "ts": 3, "dur": 1}]}')


def distinct_names(src, dst):
    """Rewrites a synth run so that every kernel event has a name of its own."""
    os.makedirs(dst, exist_ok=True)
    count = 0
    pattern = re.compile(rb'^(\s*\{"ph":"X","cat":"kernel","name":"[^"]*)"')
    for name in sorted(os.listdir(src)):
        if not name.endswith(".json.gz"):
            continue
        with gzip.open(os.path.join(src, name), "rb") as fin, \
                gzip.open(os.path.join(dst, name), "wb", compresslevel=1) as fout:
            for line in fin:
                m = pattern.match(line)
                if m:
                    count += 1
                    line = m.group(1) + b"_u%d\"" % count + line[m.end():]
                fout.write(line)
    return count


def main():
    out, tracegate = sys.argv[1], sys.argv[2]
    cases = set(sys.argv[3:]) or {"small", "names", "pooled", "calls", "renames"}
    os.makedirs(out, exist_ok=True)
    if "small" in cases:
        small(out)
    if "names" in cases:
        names(out, tracegate)
    if "pooled" in cases:
        pooled(out, tracegate)
    if "calls" in cases:
        calls(out, tracegate)
    if "renames" in cases:
        renames(out, tracegate)


def small(out):
    """Cases 5-7: world sizes, rank numbers and huge strings."""
    for label, world in (("world-2e32", 4294967295), ("world-2e64", 18446744073709551615)):
        d = os.path.join(out, label)
        os.makedirs(d, exist_ok=True)
        for r in (0, 1):
            tiny(os.path.join(d, f"rank-{r}.json"), {"rank": r, "world_size": world})
    d = os.path.join(out, "tp-4e9")
    os.makedirs(d, exist_ok=True)
    tiny(os.path.join(d, "x-TP-0.trace.json"))
    tiny(os.path.join(d, "x-TP-4000000000.trace.json"))
    huge(os.path.join(out, "name-128m.json"), 128 * MIB, "name")
    huge(os.path.join(out, "name-2g.json"), 2048 * MIB, "name")
    huge(os.path.join(out, "args-2g.json"), 2048 * MIB, "args")
    huge(os.path.join(out, "top-2g.json"), 2048 * MIB, "top")


def names(out, tracegate):
    # Case 8: about 10^6 distinct kernel names (4 ranks x 150 decode steps of the MI355X run).
    synth = os.path.join(out, "synth-150")
    subprocess.run([tracegate, "synth", "--scenario", "mi355x-dsr1-fp4-tp4", "--decode-steps", "150",
                    "--out", synth], check=True, stdout=subprocess.DEVNULL)
    n = distinct_names(synth, os.path.join(out, "names"))
    print(f"names: {n} distinct kernel names", file=sys.stderr)


def pooled(out, tracegate):
    # Case 9: pooled allreduce calls (count printed by hostile.sh from extract).
    subprocess.run([tracegate, "synth", "--scenario", "mi355x-dsr1-fp4-tp4", "--decode-steps", "600",
                    "--out", os.path.join(out, "pooled")], check=True, stdout=subprocess.DEVNULL)


# Case 9 at 1.6 M calls: a full synth run of that size is ~8 GB of JSON, most of it events the
# pooled calls do not need. This run keeps the synth run's head (prefill, warm-up) as written and
# repeats one decode step of each rank: its graph launch and step annotations, every allreduce
# kernel and the first kernel of each other name (a little compute of every category), with no
# python_function events, its times and ids shifted by whole steps.
CALLS_STEPS = 3260  # x 4 ranks x 123 allreduce calls: 1.6 M calls in the kept decode steps
FIELD = re.compile(r'("ts":|"correlation":|"id":|"External id":|"Ev Idx":)(\d+(?:\.\d+)?)')


def shifted(template, k, period_ns, id_step):
    """A template line (pieces split by FIELD) with its times moved k periods and ids k steps."""
    out = []
    for i, piece in enumerate(template):
        if i % 3 != 2:
            out.append(piece)
        elif template[i - 1] == '"ts":':
            ns = round(float(piece) * 1000) + k * period_ns
            out.append(f"{ns // 1000}.{ns % 1000:03d}")
        else:
            out.append(str(int(piece) + k * id_step))
    return "".join(out)


def lean_rank(src, dst, steps):
    with gzip.open(src, "rt") as f:
        lines = f.read().split("\n")
    launches = [i for i, line in enumerate(lines) if '"name":"hipGraphLaunch"' in line]
    end = next(i for i in range(len(lines) - 1, -1, -1) if lines[i].strip() == "],")
    # The second-last decode step is the template: the last one's start gives the period.
    first, last = launches[-2], launches[-1]
    ts = lambda line: float(re.search(r'"ts":([0-9.]+)', line).group(1))
    period_ns = round((ts(lines[last]) - ts(lines[first])) * 1000)
    block, seen = [], set()
    for line in lines[first:last]:
        if '"cat":"python_function"' in line:
            continue
        if '"cat":"kernel"' in line:
            name = re.search(r'"name":"((?:[^"\\]|\\.)*)"', line).group(1)
            if "cross_device_reduce" not in name and name in seen:
                continue
            seen.add(name)
        block.append(FIELD.split(line.rstrip(",")))
    count = 0
    with open(dst, "w") as out:
        out.write("\n".join(lines[:first]) + "\n")
        for k in range(steps):
            for n, t in enumerate(block):
                out.write(shifted(t, k, period_ns, 1 << 20))
                out.write(",\n" if (k, n) != (steps - 1, len(block) - 1) else "\n")
                count += "cross_device_reduce" in t[0] and '"cat":"kernel"' in t[0]
        out.write("\n".join(lines[end:]))
    return count


def calls(out, tracegate):
    synth = os.path.join(out, "synth-calls")
    subprocess.run([tracegate, "synth", "--scenario", "mi355x-dsr1-fp4-tp4", "--decode-steps", "8",
                    "--python-functions-per-step", "0", "--out", synth], check=True,
                   stdout=subprocess.DEVNULL)
    dst = os.path.join(out, "calls")
    os.makedirs(dst, exist_ok=True)
    total = 0
    for name in sorted(os.listdir(synth)):
        if name.endswith(".trace.json.gz"):
            total += lean_rank(os.path.join(synth, name), os.path.join(dst, name[:-3]), CALLS_STEPS)
    print(f"calls: {total} allreduce calls in {CALLS_STEPS} decode steps per rank", file=sys.stderr)


# Issue 27, D6: kernels renamed under huge names. Every old name has the same function as every
# new one (`Cijk_Alik_Bljk_X<...>`, dense_gemm), so every pair is compared. Each case is a
# one-rank synth run with a copy of a once-per-step GEMM under each new name, and a baseline of
# that run listing the old names once per step.
def lcg_digits(seed, n):
    x, out = seed * 6364136223846793005 + 1, []
    for _ in range(n):
        x = (x * 6364136223846793005 + 1442695040888963407) % (1 << 64)
        out.append(chr(48 + (x >> 33) % 10))
    return "".join(out)


def rename_case(out, tracegate, label, old_names, new_names):
    base = os.path.join(out, f"{label}-synth")
    subprocess.run([tracegate, "synth", "--scenario", "mi355x-dsr1-fp4-tp4", "--ranks", "1",
                    "--decode-steps", "12", "--python-functions-per-step", "0", "--gzip-level",
                    "none", "--out", base], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    baseline = os.path.join(out, f"{label}.toml")
    subprocess.run([tracegate, "baseline", "new", base, "--baseline", baseline], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(baseline, "a") as f:
        for name in old_names:
            f.write(f'\n[[breakdown.kernels]]\nname = "{name}"\ncategory = "dense_gemm"\n'
                    "ms_per_step = 0.05\ncalls_per_step = 1.0\n")
    run = os.path.join(out, label)
    os.makedirs(run, exist_ok=True)
    once = '"name":"Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT32x64x256_'
    for file in os.listdir(base):
        if not file.endswith(".trace.json"):
            continue
        with open(os.path.join(base, file)) as fin, open(os.path.join(run, file), "w") as fout:
            for line in fin:
                if once in line and '"cat":"kernel"' in line:
                    start = line.index(once) + len('"name":"')
                    end = line.index('"', start)
                    for name in new_names:
                        copy = (line[:start] + name + line[end:]).rstrip()
                        fout.write(copy + ("\n" if copy.endswith(",") else ",\n"))
                fout.write(line)


def renames(out, tracegate):
    # One pair of 60,000-character names (a character diff: 23 s).
    rename_case(out, tracegate, "renames-60k", [f"Cijk_Alik_Bljk_X<{lcg_digits(1, 60000)}>"],
                [f"Cijk_Alik_Bljk_X<{lcg_digits(2, 60000)}>"])
    # 122 x 122 names of 1,000 characters (56 s), unrelated to each other...
    old = [f"Cijk_Alik_Bljk_X<{lcg_digits(i, 1000)}>" for i in range(122)]
    new = [f"Cijk_Alik_Bljk_X<{lcg_digits(1000 + i, 1000)}, 2>" for i in range(122)]
    rename_case(out, tracegate, "renames-122", old, new)
    # ... and sharing their first 600 characters, so that every pair is diffed in the window.
    head = lcg_digits(7, 600)
    old = [f"Cijk_Alik_Bljk_X<{head}{lcg_digits(i, 400)}>" for i in range(122)]
    new = [f"Cijk_Alik_Bljk_X<{head}{lcg_digits(1000 + i, 400)}, 2>" for i in range(122)]
    rename_case(out, tracegate, "renames-122-head", old, new)
    # 10 x 10 names of 30,000 characters (more than 150 s), each renamed (one argument more).
    old = [f"Cijk_Alik_Bljk_X<{lcg_digits(i, 30000)}>" for i in range(10)]
    new = [f"Cijk_Alik_Bljk_X<{lcg_digits(i, 30000)}, 2>" for i in range(10)]
    rename_case(out, tracegate, "renames-10x30k", old, new)


if __name__ == "__main__":
    main()
