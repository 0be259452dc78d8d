#!/usr/bin/env python3
"""Calibrated tolerances against the shipped defaults, on synth runs with between-run variation.

For each jitter level (`synth --run-jitter`): `baseline calibrate` from the calibration seeds,
then every clean seed and every injected seed checked against it; the same clean and injected
seeds checked against `baseline new` of one clean run (seed 1) with the shipped default
tolerances, which is what a team without calibration has. Prints a markdown report (the figures
of bench/RESULTS.md) and exits 1 when a "Done when" criterion of issue 31 does not hold.

  bench/calibrate.sh                # the full measurement: 10 + 50 + 20 seeds x 2 jitter levels
  bench/calibrate.sh --quick        # CI: the same 10 calibration seeds, 5 clean and 4 injected
                                    # seeds a level; the same criteria, exit 1 when one fails
  TRACEGATE=path/to/tracegate bench/calibrate.sh   # the binary (default target/release/tracegate)
"""

import argparse
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from concurrent.futures import ThreadPoolExecutor

SCENARIO = "mi355x-dsr1-fp4-tp4"


def tracegate():
    path = os.environ.get("TRACEGATE", "target/release/tracegate")
    if not os.path.exists(path):
        sys.exit(f"{path}: not built (cargo build --release, or TRACEGATE=...)")
    return path


def run(cmd, check=True):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if check and p.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stderr}")
    return p


def synth(tg, out, seed, jitter, inject=None):
    cmd = [tg, "synth", "--scenario", SCENARIO, "--seed", str(seed), "--run-jitter", str(jitter),
           "--gzip-level", "none", "--python-functions-per-step", "5", "--out", out]
    if inject:
        cmd += ["--inject", inject]
    run(cmd)
    return out


def check(tg, run_dir, baseline, verdict):
    """Exit code and the gated metrics that did not pass (regressed or noisy)."""
    p = run([tg, "check", run_dir, "--baseline", baseline, "--format", "json", "--no-github",
             "--verdict-out", verdict], check=False)
    if p.returncode not in (0, 1, 2):
        sys.exit(f"check {run_dir}: exit {p.returncode}\n{p.stderr}")
    try:
        result = json.load(open(verdict))
    except (OSError, ValueError):
        sys.exit(f"check {run_dir}: no verdict ({p.returncode}):\n{p.stderr}")
    failed = [(m["name"], m["verdict"]) for m in result["metrics"]
              if m["gated"] and m["verdict"] in ("regressed", "noisy", "missing")]
    return p.returncode, failed


def one(tg, work, level, seed, inject, baselines):
    """Generates one run, checks it against every baseline, removes it."""
    tag = f"j{level}-s{seed}-{inject or 'clean'}".replace("=", "")
    d = os.path.join(work, tag)
    synth(tg, d, seed, level, inject)
    out = {}
    for name, b in baselines.items():
        out[name] = check(tg, d, b, os.path.join(work, f"{tag}-{name}.json"))
    shutil.rmtree(d)
    return seed, inject, out


def level_report(tg, work, level, cal_seeds, clean_seeds, inj_seeds, injections, jobs):
    t0 = time.time()
    cal_dirs = [synth(tg, os.path.join(work, f"cal-j{level}-s{s}"), s, level) for s in cal_seeds]
    calibrated = os.path.join(work, f"calibrated-j{level}.toml")
    p = run([tg, "baseline", "calibrate", *cal_dirs, "--baseline", calibrated])
    table = p.stderr
    default = os.path.join(work, f"default-j{level}.toml")
    # A baseline as `baseline new` writes it from one clean run: the shipped default tolerances.
    run([tg, "baseline", "new", cal_dirs[0], "--baseline", default])
    for d in cal_dirs:
        shutil.rmtree(d)
    cal = tomllib.load(open(calibrated, "rb"))
    baselines = {"calibrated": calibrated, "default": default}
    jobs_list = [(s, None) for s in clean_seeds] + [(s, i) for i in injections for s in inj_seeds]
    with ThreadPoolExecutor(jobs) as pool:
        results = list(pool.map(lambda a: one(tg, work, level, a[0], a[1], baselines), jobs_list))
    return {"level": level, "cal": cal, "table": table, "results": results,
            "seconds": time.time() - t0}


def summarise(rep, injections):
    clean = [r for r in rep["results"] if r[1] is None]
    out = {"clean": {}, "inject": {}}
    for name in ("calibrated", "default"):
        codes = collections.Counter(r[2][name][0] for r in clean)
        metrics = collections.Counter(m for r in clean for m, _ in r[2][name][1])
        out["clean"][name] = (codes, metrics, len(clean))
        for inj in injections:
            runs = [r for r in rep["results"] if r[1] == inj]
            caught = sum(1 for r in runs
                         if r[2][name][0] == 1
                         and any(m == "moe_us_per_layer" and v == "regressed"
                                 for m, v in r[2][name][1]))
            out["inject"][(name, inj)] = (caught, len(runs))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="a few seeds, for CI")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--keep", help="keep the baselines and verdicts in this directory")
    args = ap.parse_args()
    tg = tracegate()
    if args.quick:
        # Calibration from fewer seeds is a different measurement: with seeds 1-5 at jitter 3,
        # seed 5 (a clean run, 0.96x the median decode step) is left out as an outlier, the
        # decode-step spread of the other four is 0.69%, and 2 of 3 clean seeds fail.
        cal_seeds, clean_seeds, inj_seeds = range(1, 11), range(101, 106), range(201, 205)
    else:
        cal_seeds, clean_seeds, inj_seeds = range(1, 11), range(101, 151), range(201, 221)
    injections = ["moe=1.25", "moe=1.04"]
    levels = [3, 0.5]
    work = args.keep or tempfile.mkdtemp(prefix="tracegate-calibrate-")
    os.makedirs(work, exist_ok=True)
    start = time.time()
    reports = [level_report(tg, work, lv, cal_seeds, clean_seeds, inj_seeds, injections, args.jobs)
               for lv in levels]
    ok = True
    print(f"# Calibration benchmark ({SCENARIO}; calibrate from seeds {cal_seeds.start}-"
          f"{cal_seeds.stop - 1}, clean seeds {clean_seeds.start}-{clean_seeds.stop - 1}, "
          f"injected seeds {inj_seeds.start}-{inj_seeds.stop - 1})\n")
    for rep in reports:
        lv = rep["level"]
        s = summarise(rep, injections)
        cm = rep["cal"]["calibration"]["metrics"]
        moe = cm["moe_us_per_layer"]
        print(f"## --run-jitter {lv}\n")
        print(f"`baseline calibrate` table ({rep['cal']['calibration']['runs']} runs kept):\n")
        print("```\n" + rep["table"].strip() + "\n```\n")
        print("| baseline | clean seeds | pass | regression (exit 1) | cannot judge (exit 2) "
              "| metrics that failed clean seeds | moe=1.25 caught | moe=1.04 caught |")
        print("|---|---|---|---|---|---|---|---|")
        for name in ("calibrated", "default"):
            codes, metrics, n = s["clean"][name]
            failing = ", ".join(f"{m} ×{c}" for m, c in metrics.most_common()) or "none"
            inj = [s["inject"][(name, i)] for i in injections]
            label = (f"calibrated ({len(cal_seeds)} runs)" if name == "calibrated"
                     else "`baseline new` of seed 1, default tolerances")
            print(f"| {label} | {n} | {codes[0]} | {codes[1]} | {codes[2]} | {failing} | "
                  f"{inj[0][0]}/{inj[0][1]} | {inj[1][0]}/{inj[1][1]} |")
        mdc = moe.get("mdc_pct")
        print(f"\nmoe_us_per_layer: calibrated tolerance {moe['tolerance']}, minimum detectable "
              f"change {mdc:.2f}%; the 4% change is {'above' if 4 > mdc else 'below'} it. "
              f"({rep['seconds']:.0f} s)\n")
        codes, _, n = s["clean"]["calibrated"]
        checks = [
            (f"jitter {lv}: at most 1 regression of {n} clean seeds", codes[1] <= 1),
            (f"jitter {lv}: at most 2 cannot-judge of {n} clean seeds", codes[2] <= 2),
            (f"jitter {lv}: [calibration] has an mdc per gated metric",
             all("mdc" in m for m in cm.values())),
        ]
        if lv == 3:
            c, t = s["inject"][("calibrated", "moe=1.25")]
            checks.append((f"jitter 3: moe=1.25 caught in {c} of {t} (>= 95%)", c * 20 >= t * 19))
            checks.append(("jitter 3: 4% MoE below the mdc", mdc > 4))
        else:
            c, t = s["inject"][("calibrated", "moe=1.04")]
            checks.append((f"jitter 0.5: moe=1.04 caught in {c} of {t} (>= 95%)", c * 20 >= t * 19))
            checks.append(("jitter 0.5: 4% MoE above the mdc", mdc < 4))
        for text, good in checks:
            print(f"- {'PASS' if good else 'FAIL'}: {text}")
            ok = ok and good
        print()
    print(f"Total {time.time() - start:.0f} s, {args.jobs} jobs, binary {tg}.")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    if not ok:
        sys.exit(1)


if __name__ == "__main__":
    main()
