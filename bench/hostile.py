#!/usr/bin/env python3
"""Writes the full-size hostile inputs of issue 21, cases 5-9, into DIR (see bench/hostile.sh).

usage: hostile.py DIR TRACEGATE
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
    os.makedirs(out, exist_ok=True)
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
    # Case 8: about 10^6 distinct kernel names (4 ranks x 150 decode steps of the MI355X run).
    synth = os.path.join(out, "synth-150")
    subprocess.run([tracegate, "synth", "--scenario", "mi355x-dsr1-fp4-tp4", "--decode-steps", "150",
                    "--out", synth], check=True, stdout=subprocess.DEVNULL)
    n = distinct_names(synth, os.path.join(out, "names"))
    print(f"names: {n} distinct kernel names", file=sys.stderr)
    # Case 9: pooled allreduce calls (count printed by hostile.sh from extract).
    subprocess.run([tracegate, "synth", "--scenario", "mi355x-dsr1-fp4-tp4", "--decode-steps", "600",
                    "--out", os.path.join(out, "pooled")], check=True, stdout=subprocess.DEVNULL)


if __name__ == "__main__":
    main()
