#!/usr/bin/env python3
"""tracegate against Holistic Trace Analysis (HTA): speed, memory and fidelity, in one run.

    bench/run.sh                  # 100 MB, 1 GB and 4 GB runs, then the fidelity check
    bench/run.sh --quick          # 100 MB only, one repeat, then the fidelity check
    bench/run.sh --fidelity-only  # only the per-rank comparison with HTA
    bench/run.sh --threads-only   # no HTA: one merged 800 MB file and the per-rank 1 GB run,
                                  # extract on all cores vs --threads 1 vs gzip -dc

Needs only the project's prerequisites (Rust toolchain, Python 3.11, gcc) and gzip. It creates
bench/.venv with HTA (pinned below), builds the release binary, makes `tracegate synth --scale`
runs of 8 ranks under /tmp, and times, alternating (a, b, c, a, b, c, ...):

  (a) `tracegate extract <run> --format json`
  (b) HTA: `TraceAnalysis(trace_dir=<run>)`, `get_temporal_breakdown`, `get_comm_comp_overlap`
  (c) `gzip -dc` of the run's files to /dev/null (one `sh -c`, the files one after another)

each as a direct child of this script. Wall time is measured here; peak memory is the larger of
the child's `ru_maxrss` (from `os.wait4`: the largest single process of its tree) and the largest
sum of the RSS of the child and its descendants sampled every 50 ms from /proc (HTA parses ranks
in a pool of forked workers, so its tree holds several large processes at once). HTA is killed
after --hta-timeout seconds or when its tree exceeds --hta-max-rss-gb; the table says so.

The full run writes the tables to bench/RESULTS.md (--quick and --fidelity-only to a file under
/tmp/tracegate-bench unless --results says otherwise); what follows the line `<!-- kept by bench/run.py -->` in
that file (the hand-written explanations and profile) is kept.
"""
import argparse
import datetime
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "target", "release", "tracegate")
VENV = os.path.join(ROOT, "bench", ".venv")
VPY = os.path.join(VENV, "bin", "python")
# HTA 0.5.0 does not cap pandas, and under pandas 3 (3.1.1) its parser fails on runs of a few hundred
# thousand events per rank (TypeError: Invalid value ... for dtype 'int16'): pandas is pinned to 2.
PINS = ["holistictraceanalysis==0.5.0", "pandas==2.3.3"]
SCENARIO = "h200-dsr1-fp8-tp8"
RANKS = 8
WORK = os.environ.get("TRACEGATE_BENCH_DIR", "/tmp/tracegate-bench")
# Another build to time beside this one (`--threads-only`): e.g. main's, to see what a change costs.
BASE_BIN = os.environ.get("TRACEGATE_BENCH_BASE")
RESULTS = os.path.join(ROOT, "bench", "RESULTS.md")
SHARED = os.environ.get("TRACEGATE_SHARED_TRACES", os.path.join(os.path.dirname(ROOT), "..", "shared", "traces"))
if not os.path.isdir(SHARED):
    SHARED = "/work/shared/traces"
MB = 1e6
KEEP = "<!-- kept by bench/run.py -->"

# What HTA is timed on: load, then the two analyses with per-rank figures.
HTA_TIMED = """
import sys, warnings, logging
warnings.filterwarnings("ignore"); logging.disable(logging.WARNING)
from hta.trace_analysis import TraceAnalysis
a = TraceAnalysis(trace_dir=sys.argv[1])
a.get_temporal_breakdown(visualize=False)
a.get_comm_comp_overlap(visualize=False)
"""

# Fidelity: HTA's own per-rank figures, plus the comm-kernel union from HTA's own classifier and
# interval merge (the denominator of its overlap), all in ns (run with HTA_DISABLE_NS_ROUNDING=1).
HTA_FIDELITY = """
import sys, json, warnings, logging
warnings.filterwarnings("ignore"); logging.disable(logging.WARNING)
from hta.trace_analysis import TraceAnalysis
from hta.utils.utils import get_kernel_type, merge_kernel_intervals, KernelType
if sys.argv[2:] == ["nofilter"]:
    # HTA drops, in traces with several ProfilerStep annotations, every GPU kernel whose correlation
    # id matches no CPU event it keeps (a kernel without a launch event): switch that off.
    from hta.common.trace import Trace
    Trace._filter_irrelevant_gpu_kernels = lambda self, include_last_profiler_step=False: None
a = TraceAnalysis(trace_dir=sys.argv[1], include_last_profiler_step=True)
tb = a.get_temporal_breakdown(visualize=False)
ov = a.get_comm_comp_overlap(visualize=False)
sym = a.t.symbol_table.get_sym_table()
out = {}
for _, row in tb.iterrows():
    r = int(row["rank"])
    df = a.t.traces[r]
    k = df[df["stream"].ne(-1)].copy()
    k["kt"] = k["name"].apply(lambda i: get_kernel_type(sym[i]))
    comm = merge_kernel_intervals(k[k["kt"].eq(KernelType.COMMUNICATION.name)].copy())
    o = ov[ov["rank"] == r]
    out[r] = {"span": float(row["kernel_time(us)"]), "idle": float(row["idle_time(us)"]),
              "compute": float(row["compute_time(us)"]), "non_compute": float(row["non_compute_time(us)"]),
              "comm_union": float((comm["end"] - comm["ts"]).sum()) if len(comm) else 0.0,
              "activities": int(len(k)),
              "overlap_pct": float(o["comp_comm_overlap_pctg"].iloc[0]) if len(o) else None}
    if out[r]["overlap_pct"] != out[r]["overlap_pct"]:  # NaN: no comm kernel
        out[r]["overlap_pct"] = None
print(json.dumps(out))
"""


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def tree_rss_kb(pid):
    """RSS (kB) of pid and all its descendants, from /proc."""
    children = {}
    rss = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            ppid, pages = int(fields[1]), int(fields[21])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(d))
        rss[int(d)] = pages * os.sysconf("SC_PAGE_SIZE") // 1024
    total, stack = 0, [pid]
    while stack:
        p = stack.pop()
        total += rss.get(p, 0)
        stack.extend(children.get(p, []))
    return total


def run_measured(cmd, timeout=None, max_rss_kb=None, env=None, stdout=subprocess.DEVNULL):
    """Runs cmd as a direct child. Returns dict(wall, rss_mb, ok, why, out)."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=stdout, stderr=subprocess.PIPE, env=env, start_new_session=True)
    peak_tree, why = 0, None
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        peak_tree = max(peak_tree, tree_rss_kb(proc.pid))
        elapsed = time.perf_counter() - start
        if timeout and elapsed > timeout:
            why = f"killed after {timeout:.0f} s"
        elif max_rss_kb and peak_tree > max_rss_kb:
            why = f"killed at {peak_tree / 1024 / 1024:.1f} GB RSS"
        if why:
            os.killpg(proc.pid, signal.SIGKILL)
            _, status, usage = os.wait4(proc.pid, 0)
            break
        time.sleep(0.05)
    wall = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    out = proc.stdout.read().decode() if stdout == subprocess.PIPE else ""
    err = proc.stderr.read().decode()
    if why is None and code != 0:
        why = f"exit {code}: {err.strip().splitlines()[-1] if err.strip() else ''}"
    return {"wall": wall, "rss_mb": max(usage.ru_maxrss, peak_tree) / 1024.0, "ok": why is None,
            "cpu": usage.ru_utime + usage.ru_stime,
            "why": why, "out": out, "err": err}


def setup_venv():
    if not os.path.exists(VPY):
        log(f"== venv {VENV}")
        subprocess.run([sys.executable, "-m", "venv", VENV], check=True)
    check = ("import importlib.metadata as m; "
             "print(m.version('HolisticTraceAnalysis'), 'with pandas', m.version('pandas'))")
    got = subprocess.run([VPY, "-c", check], capture_output=True, text=True)
    want = " with pandas ".join(p.split("==")[1] for p in PINS)
    if got.stdout.strip() != want:
        log(f"== pip install {' '.join(PINS)}")
        subprocess.run([VPY, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"] + PINS, check=True)
        got = subprocess.run([VPY, "-c", check], capture_output=True, text=True, check=True)
    return got.stdout.strip()


def build():
    log("== cargo build --release")
    subprocess.run(["cargo", "build", "--release", "--locked", "--quiet"], cwd=ROOT, check=True)


def trace_files(d):
    return sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith((".json.gz", ".json"))
                  and not f.startswith("truth"))


def uncompressed_bytes(files):
    total = 0
    for f in files:
        if not f.endswith(".gz"):
            total += os.path.getsize(f)
            continue
        out = subprocess.run(f"gzip -dc '{f}' | wc -c", shell=True, capture_output=True, check=True)
        total += int(out.stdout)
    return total


def synth_run(label, scale, layout="per-rank"):
    """A synth run of 8 ranks at --scale, its trace files alone in WORK/label/traces (HTA reads
    every .json/.gz of the directory, so truth.json stays outside). Reused when already there."""
    base = os.path.join(WORK, label)
    traces = os.path.join(base, "traces")
    stamp = os.path.join(base, "scale.txt")
    if os.path.exists(stamp) and open(stamp).read().strip() == repr((scale, layout)):
        return traces
    shutil.rmtree(base, ignore_errors=True)
    gen = os.path.join(base, "gen")
    log(f"== synth {label}: --scenario {SCENARIO} --ranks {RANKS} --scale {scale} --layout {layout}")
    subprocess.run([BIN, "synth", "--scenario", SCENARIO, "--ranks", str(RANKS), "--scale", repr(scale),
                    "--seed", "1", "--layout", layout, "--out", gen], check=True, stdout=subprocess.DEVNULL)
    os.makedirs(traces)
    for f in trace_files(gen):
        os.rename(f, os.path.join(traces, os.path.basename(f)))
    with open(stamp, "w") as f:
        f.write(repr((scale, layout)))
    return traces


def calibrate():
    """(fixed bytes, bytes per unit of --scale) of uncompressed JSON: a line through two small runs
    (the warm-up steps and prefill do not scale)."""
    lo, hi = 0.05, 0.25
    b_lo = uncompressed_bytes(trace_files(synth_run("calibrate", lo)))
    b_hi = uncompressed_bytes(trace_files(synth_run("calibrate-hi", hi)))
    per_unit = (b_hi - b_lo) / (hi - lo)
    return b_lo - per_unit * lo, per_unit


def fmt_mb(x):
    return f"{x:,.0f}"


def bench(sizes, repeats, hta_timeout, hta_max_rss_gb):
    fixed, per_unit = calibrate()
    log(f"   {fixed / MB:.0f} MB + {per_unit / MB:.0f} MB of JSON per unit of --scale")
    rows = []
    for label, target_mb in sizes:
        scale = round((target_mb * MB - fixed) / per_unit, 3)
        d = synth_run(label, scale)
        files = trace_files(d)
        assert len(files) == RANKS and all(f.endswith(".json.gz") for f in files), files
        raw = uncompressed_bytes(files)
        gz = sum(os.path.getsize(f) for f in files)
        reps = repeats.get(label, 1)
        tools = {
            "tracegate": [BIN, "extract", d, "--format", "json"],
            "hta": [VPY, "-c", HTA_TIMED, d],
            "gzip": ["sh", "-c", "for f in \"$@\"; do gzip -dc \"$f\"; done > /dev/null", "sh"] + files,
        }
        res = {k: [] for k in tools}
        hta_failed = None
        for i in range(reps):
            for name, cmd in tools.items():
                if name == "hta" and hta_failed:
                    continue
                kw = {}
                if name == "hta":
                    kw = {"timeout": hta_timeout, "max_rss_kb": hta_max_rss_gb * 1024 * 1024}
                r = run_measured(cmd, **kw)
                log(f"   {label} #{i + 1} {name}: {r['wall']:.2f} s, {r['rss_mb']:.0f} MB"
                    + ("" if r["ok"] else f" ({r['why']})"))
                if not r["ok"]:
                    if name != "hta":
                        sys.exit(f"{name} failed: {r['why']}\n{r['err']}")
                    hta_failed = r["why"]
                    continue
                res[name].append(r)
        rows.append({"label": label, "scale": scale, "raw": raw, "gz": gz, "reps": reps, "res": res,
                     "hta_failed": hta_failed})
    return rows


def med(rs, key):
    return statistics.median(r[key] for r in rs) if rs else None


def bench_tables(rows):
    out = ["| run | tool | wall s | peak RSS MB | MB/s of JSON |", "|---|---|---:|---:|---:|"]
    ratios = ["| run | JSON MB (gz MB) | repeats | HTA / tracegate wall (speed-up) | HTA / tracegate peak RSS "
              "| tracegate / gzip wall |", "|---|---:|---:|---:|---:|---:|"]
    names = {"tracegate": "`tracegate extract`", "hta": "HTA load + temporal + overlap",
             "gzip": "`gzip -dc` > /dev/null"}
    for row in rows:
        raw_mb = row["raw"] / MB
        for name in ("tracegate", "hta", "gzip"):
            rs = row["res"][name]
            if not rs:
                out.append(f"| {row['label']} | {names[name]} | did not finish: {row['hta_failed']} | | |")
                continue
            w, m = med(rs, "wall"), med(rs, "rss_mb")
            out.append(f"| {row['label']} | {names[name]} | {w:.2f} | {fmt_mb(m)} | {raw_mb / w:,.0f} |")
        t, h, g = row["res"]["tracegate"], row["res"]["hta"], row["res"]["gzip"]
        speed = f"{med(h, 'wall') / med(t, 'wall'):.1f}x" if h else f"HTA did not finish ({row['hta_failed']})"
        mem = f"{med(h, 'rss_mb') / med(t, 'rss_mb'):.1f}x" if h else "—"
        ratios.append(f"| {row['label']} | {fmt_mb(raw_mb)} ({row['gz'] / MB:.0f}) | {row['reps']} | {speed} | {mem} "
                      f"| {med(t, 'wall') / med(g, 'wall'):.2f} |")
    return "\n".join(out), "\n".join(ratios)


# ---------------------------------------------------------------- threads

# --scale of the single merged file: about 800 MB of JSON (806.8 MB at 4.8).
MERGED_SCALE = 4.8


def threads_bench(repeats, sizes):
    """tracegate on all cores, tracegate --threads 1 and gzip -dc, alternating, on SGLang's
    single merged file (8 ranks in one .json.gz) and on per-rank runs of `sizes`. Returns rows."""
    runs = [("merged 800 MB (1 file)", synth_run("merged-800", MERGED_SCALE, "merged"))]
    if sizes:
        fixed, per_unit = calibrate()
        for label, target_mb in sizes:
            scale = round((target_mb * MB - fixed) / per_unit, 3)
            runs.append((f"per rank {label} (8 files)", synth_run(label, scale)))
    rows = []
    for label, d in runs:
        files = trace_files(d)
        raw = uncompressed_bytes(files)
        tools = {
            "all": [BIN, "extract", d, "--format", "json"],
            "gzip": ["sh", "-c", "for f in \"$@\"; do gzip -dc \"$f\"; done > /dev/null", "sh"] + files,
            "one": [BIN, "extract", d, "--format", "json", "--threads", "1"],
        }
        if BASE_BIN:
            tools["base"] = [BASE_BIN, "extract", d, "--format", "json"]
        res = {k: [] for k in tools}
        load = [os.getloadavg()[0]]
        for i in range(repeats):
            for name, cmd in tools.items():
                r = run_measured(cmd)
                if not r["ok"]:
                    sys.exit(f"{name} failed: {r['why']}\n{r['err']}")
                log(f"   {label} #{i + 1} {name}: {r['wall']:.2f} s, {r['rss_mb']:.0f} MB")
                res[name].append(r)
            load.append(os.getloadavg()[0])
        rows.append({"label": label, "raw": raw, "files": len(files), "res": res, "load": load})
    return rows


def threads_table(rows, repeats):
    cores = os.cpu_count()
    out = [f"| run | JSON MB | `extract` ({cores} threads) wall, CPU | `extract --threads 1` wall, CPU "
           f"| `gzip -dc` wall, CPU | extract / gzip wall | `--threads 1` / `--threads {cores}` wall "
           f"| peak RSS ({cores} threads) | RSS / JSON | load average (1 min) |",
           "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    base_lines = []
    for row in rows:
        a, o, g = (row["res"][k] for k in ("all", "one", "gzip"))
        wa, wo, wg, rss = med(a, "wall"), med(o, "wall"), med(g, "wall"), med(a, "rss_mb")
        ca, co, cg = med(a, "cpu"), med(o, "cpu"), med(g, "cpu")
        if row["res"].get("base"):
            b = row["res"]["base"]
            wb, cb, rb = med(b, "wall"), med(b, "cpu"), med(b, "rss_mb")
            base_lines.append(f"| {row['label']} | {wb / wg:.2f} | {wa / wg:.2f} | {wa / wb:.3f} | {ca / cb:.3f} "
                              f"| {rb:,.0f} MB | {rss:,.0f} MB | {rss / rb:.3f} |")
        out.append(f"| {row['label']} | {fmt_mb(row['raw'] / MB)} | {wa:.2f} s, {ca:.2f} s | {wo:.2f} s, {co:.2f} s "
                   f"| {wg:.2f} s, {cg:.2f} s | **{wa / wg:.2f}** | **{wo / wa:.2f}x** | {rss:,.0f} MB "
                   f"| {100 * rss * 2**20 / row['raw']:.1f}% | {min(row['load']):.1f} to {max(row['load']):.1f} |")
    if base_lines:
        out += ["", f"Against `TRACEGATE_BENCH_BASE` ({BASE_BIN}), timed in the same alternation:", "",
                "| run | base / gzip wall | this / gzip wall | this / base wall | this / base CPU "
                "| base peak RSS | this peak RSS | this / base RSS |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
        out += base_lines
    return (f"Medians of {repeats} alternating repeats (extract on all cores, `gzip -dc`, extract --threads 1); "
            "CPU = user + system time of the process (`wait4`); MB = 10^6 bytes of uncompressed JSON; peak RSS "
            "as above. On a machine shared with other jobs (the load average column) wall times stretch and "
            "their ratios say little; CPU times stay meaningful.\n\n" + "\n".join(out))


# ---------------------------------------------------------------- fidelity


def tracegate_whole_trace(d):
    out = subprocess.run([BIN, "report", d, "--format", "json", "--hta-comm"], capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(out.stderr.strip())
    return {int(r["rank"]): r for r in json.loads(out.stdout)["whole_trace"]}


def hta_figures(d, nofilter=False):
    env = dict(os.environ, HTA_DISABLE_NS_ROUNDING="1")
    r = run_measured([VPY, "-c", HTA_FIDELITY, d] + (["nofilter"] if nofilter else []), env=env, stdout=subprocess.PIPE, timeout=900)
    if not r["ok"]:
        raise RuntimeError(r["why"])
    return {int(k): v for k, v in json.loads(r["out"].strip().splitlines()[-1]).items()}


def fidelity_sets():
    sets = [("synth 8 ranks (scale 0.05)", synth_run("calibrate", 0.05))]
    for name, rel in [("DLRM 8 ranks (PARAM)", "param/dlrm_kineto"),
                      ("trace_diff control", "hta/trace_diff/control"),
                      ("trace_diff test", "hta/trace_diff/test"),
                      ("df_index_resolver", "hta/df_index_resolver"),
                      ("amd_trace (1 rank)", "hta/amd_trace")]:
        p = os.path.join(SHARED, rel)
        if os.path.isdir(p):
            sets.append((name, p))
    return sets


def fidelity():
    """Per rank: each figure as % of the rank's span (HTA's kernel_time: last end − first start of
    its GPU kernels), tracegate and HTA side by side, and the difference in points."""
    lines = ["| trace | rank | activities tg / HTA | span µs tg / HTA | idle % tg / HTA | compute % tg / HTA "
             "| non-compute % tg / HTA | comm % tg / HTA | overlap % tg / HTA | max Δ pt |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    notes = []
    for name, d in fidelity_sets():
        log(f"== fidelity: {name} ({d})")
        try:
            tg = tracegate_whole_trace(d)
        except RuntimeError as e:
            notes.append(f"- {name}: tracegate could not read it: {e}")
            continue
        try:
            hta = hta_figures(d)
        except RuntimeError as e:
            notes.append(f"- {name}: HTA could not load it: {e}")
            continue
        rows_for(lines, notes, name, tg, hta)
        if any(tg[r]["activities"] != hta[r]["activities"] for r in set(tg) & set(hta)):
            rows_for(lines, notes, name + ", HTA without its launch filter", tg, hta_figures(d, nofilter=True))
    return "\n".join(lines), "\n".join(notes)


def rows_for(lines, notes, name, tg, hta):
    """Appends one table row per rank of one trace set."""
    for rank in sorted(set(tg) | set(hta)):
        if rank not in tg or rank not in hta:
            notes.append(f"- {name} rank {rank}: only in {'tracegate' if rank in tg else 'HTA'}")
            continue
        t, h = tg[rank], hta[rank]
        tspan, hspan = t["span_ns"] / 1e3, h["span"]
        tv = {"idle": t["idle_ns"] / 1e3, "compute": t["compute_union_ns"] / 1e3,
              "non_compute": (t["busy_ns"] - t["compute_union_ns"]) / 1e3, "comm": t["comm_union_ns"] / 1e3}
        hv = {"idle": h["idle"], "compute": h["compute"], "non_compute": h["non_compute"],
              "comm": h["comm_union"]}
        cells, deltas = [], []
        for k in ("idle", "compute", "non_compute", "comm"):
            a = 100 * tv[k] / tspan if tspan else 0.0
            b = 100 * hv[k] / hspan if hspan else 0.0
            cells.append(f"{a:.2f} / {b:.2f}")
            deltas.append(abs(a - b))
        to, ho = t["overlap_pct"], h["overlap_pct"]
        if to is None and ho is None:
            cells.append("— / —")
        else:
            cells.append(f"{'—' if to is None else f'{to:.2f}'} / {'—' if ho is None else f'{ho:.2f}'}")
            if to is not None and ho is not None:
                deltas.append(abs(to - ho))
        lines.append(f"| {name} | {rank} | {t['activities']} / {h['activities']} | {tspan:,.1f} / {hspan:,.1f} | "
                     + " | ".join(cells) + f" | {max(deltas):.2f} |")


# ---------------------------------------------------------------- results


def machine():
    cpu = "?"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as f:
        mem_kb = int(f.readline().split()[1])
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", ".", ":!bench/RESULTS.md"],
                           cwd=ROOT, capture_output=True, text=True).stdout.strip()
    return (f"{os.cpu_count()} cores (`nproc`), {mem_kb / 1024 / 1024:.1f} GiB, {cpu}; "
            f"tracegate commit {commit}{' (with uncommitted changes)' if dirty else ''}")


def write_results(hta_version, mode, bench_part, fid_part, threads_part=None):
    keep = ""
    if os.path.exists(RESULTS):
        text = open(RESULTS).read()
        i = text.find("\n" + KEEP)
        if i >= 0:
            keep = text[i:]
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    doc = [f"# tracegate against Holistic Trace Analysis\n",
           f"`bench/run.sh{mode}` on {now}: {machine()}; HTA {hta_version} (`pip install {' '.join(PINS)}`), Python "
           f"{subprocess.run([VPY, '--version'], capture_output=True, text=True).stdout.strip().removeprefix('Python ')}.\n"]
    if bench_part:
        table, ratios = bench_part
        doc += ["## Speed and memory\n",
                f"Runs: `tracegate synth --scenario {SCENARIO} --ranks {RANKS} --scale S --seed 1` (8 `.json.gz` "
                "files). Each repeat runs (a) `tracegate extract <dir> --format json`, (b) a Python child that "
                "loads the directory with `hta.trace_analysis.TraceAnalysis(trace_dir=...)` and computes "
                "`get_temporal_breakdown` and `get_comm_comp_overlap`, (c) `gzip -dc` of the 8 files one after "
                "another in one `sh`, in that order, alternating; figures are medians over the repeats. Peak RSS "
                "is the larger of the child's `ru_maxrss` and the largest sampled (50 ms) RSS sum of its process "
                "tree (HTA parses in a pool of 2 forked workers). MB = 10^6 bytes of uncompressed JSON.\n",
                ratios + "\n", table + "\n"]
    if threads_part:
        doc += ["## One merged file on every core\n",
                f"`tracegate synth --scenario {SCENARIO} --ranks {RANKS} --scale {MERGED_SCALE} --seed 1 --layout merged` "
                "(one `.json.gz` holding every rank, as SGLang's profile merger writes it) and per-rank runs. "
                "`extract` reads a single file with one thread inflating and the others parsing chunks of "
                "events; several files side by side.\n", threads_part + "\n"]
    if fid_part:
        table, notes = fid_part
        doc += ["## Fidelity: per-rank figures of both tools\n",
                "tracegate: `tracegate report <dir> --format json --hta-comm`, its `whole_trace` per rank (every GPU "
                "activity; comm = HTA's name rule). HTA: `TraceAnalysis(trace_dir=..., "
                "include_last_profiler_step=True)` with `HTA_DISABLE_NS_ROUNDING=1`; `get_temporal_breakdown` "
                "(idle, compute, non-compute over `kernel_time` = last end − first start of the rank's GPU kernels) "
                "and `get_comm_comp_overlap` (overlap %); comm % is the union of HTA's communication kernels "
                "(`get_kernel_type` = COMMUNICATION, merged with HTA's `merge_kernel_intervals`), the denominator "
                "of its overlap. Every time figure is a % of the tool's own span; Δ is in percentage points.\n",
                table + "\n", notes + "\n" if notes else ""]
    with open(RESULTS, "w") as f:
        f.write("\n".join(doc).rstrip() + "\n" + keep)
    log(f"== wrote {RESULTS}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="100 MB only, one repeat")
    ap.add_argument("--fidelity-only", action="store_true")
    ap.add_argument("--no-fidelity", action="store_true")
    ap.add_argument("--threads-only", action="store_true",
                    help="no HTA: the single merged file (800 MB) and the per-rank 1 GB run (--quick: merged "
                    "only), extract on all cores against --threads 1 and gzip -dc; table under " + WORK)
    ap.add_argument("--repeats", type=int, default=3, help="repeats of the 100 MB and 1 GB runs (4 GB: 1)")
    ap.add_argument("--hta-timeout", type=float, default=900.0, help="seconds before HTA is killed")
    ap.add_argument("--hta-max-rss-gb", type=float, default=18.0, help="HTA tree RSS at which it is killed")
    ap.add_argument("--results", help="the markdown file to write (default: bench/RESULTS.md for the full "
                    "run; for --quick and --fidelity-only a file under " + WORK + ", so that the committed "
                    "results are not replaced by a partial run)")
    args = ap.parse_args()
    global RESULTS
    if args.results:
        RESULTS = os.path.abspath(args.results)
    elif args.quick or args.fidelity_only:
        RESULTS = os.path.join(WORK, "RESULTS-quick.md" if args.quick else "RESULTS-fidelity.md")
    if args.threads_only:
        build()
        os.makedirs(WORK, exist_ok=True)
        rows = threads_bench(args.repeats, [] if args.quick else [("1 GB", 1000)])
        table = threads_table(rows, args.repeats)
        print(table)
        path = args.results or os.path.join(WORK, "RESULTS-threads.md")
        with open(path, "w") as f:
            f.write(f"`bench/run.sh --threads-only` on "
                    f"{datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}: {machine()}\n\n"
                    + table + "\n")
        log(f"== wrote {path}")
        return
    hta_version = setup_venv()
    build()
    os.makedirs(WORK, exist_ok=True)
    bench_part = fid_part = threads_part = None
    mode = " --quick" if args.quick else " --fidelity-only" if args.fidelity_only else ""
    if not args.fidelity_only:
        if args.quick:
            sizes, repeats = [("100 MB", 100)], {"100 MB": 1}
        else:
            sizes = [("100 MB", 100), ("1 GB", 1000), ("4 GB", 4000)]
            repeats = {"100 MB": args.repeats, "1 GB": args.repeats, "4 GB": 1}
        rows = bench(sizes, repeats, args.hta_timeout, args.hta_max_rss_gb)
        bench_part = bench_tables(rows)
        print(bench_part[0] + "\n\n" + bench_part[1] + "\n")
        threads_part = threads_table(threads_bench(1 if args.quick else args.repeats, []), 1 if args.quick else args.repeats)
        print(threads_part + "\n")
    if not args.no_fidelity:
        fid_part = fidelity()
        print(fid_part[0] + "\n\n" + fid_part[1])
    write_results(hta_version, mode, bench_part, fid_part, threads_part)


if __name__ == "__main__":
    main()
