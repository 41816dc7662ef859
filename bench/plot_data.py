#!/usr/bin/env python3
"""bench/plot_data.py - results files turned into the data files bench/plot.sh plots.

    bench/plot_data.py OUTDIR FILE...

Reads, by what each file holds:
  - bench/compare.sh's tables (bench/results/*_compare_allgather.txt): NCCL's time call by
    call and as a CUDA graph, and each program's time, per size, for an allgather on N GPUs;
  - nccl-tests-format logs: cdsl-perf's stdout (one program each) and nccl-tests' own
    (all_gather_perf and co.: the NCCL reference), read with tests/perf/nccl_tests_format.py;
  - cdsl-perf's results files (-F x.json, -F x.csv).
Writes OUTDIR/<series>.dat ("size time_us busbw_gbs", one line per size, out of place),
OUTDIR/<series>.ratio ("size x", x = NCCL's time / the series' time, where NCCL has the size),
and OUTDIR/series.txt: one line per series, "name<TAB>label<TAB>kind" (kind: nccl or cdsl),
then a line "title<TAB>..." describing the machine and collective. Rows that are not
measurements (cdsl-perf on sim: N/A) are left out; a file with none is reported and skipped.
Python's standard library only.
"""
import csv
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "perf"))
import nccl_tests_format  # noqa: E402


def busbw_factor(collective, n):
    if collective in ("allgather", "reducescatter"):
        return (n - 1) / n
    if collective == "allreduce":
        return 2 * (n - 1) / n
    return 1.0


class Series:
    def __init__(self, name, label, kind):
        self.name, self.label, self.kind = name, label, kind
        self.points = {}            # size -> (time_us, busbw)


def compare_table(text, found):
    """bench/compare.sh's table: NCCL's best of its two timings, and each program."""
    m = re.search(r"^# time in us per (\w+) \((\d+) GPUs\)", text, re.M)
    coll, n = m.group(1), int(m.group(2))
    devices = re.findall(r"^# \d+, (.+?), ([\d.]+)$", text, re.M)
    lines = text[m.end():].splitlines()
    head = next(l for l in lines if l.strip().startswith("size"))
    names = [w for w in head.split() if w not in ("size", "nccl", "nccl-graph", "busbw", "(x)")]
    nccl = found.setdefault("nccl", Series("nccl", "NCCL 2.28 (best of calls and CUDA graph)", "nccl"))
    progs = [found.setdefault(p, Series(p, p, "cdsl")) for p in names]
    for line in lines:
        f = line.split()
        if not f or not f[0].isdigit():
            continue
        size = int(f[0])
        times = [float(x) for x in f[1:3] if x != "-"]
        if times:
            best = min(times)
            nccl.points[size] = (best, size / best / 1e3 * busbw_factor(coll, n))
        rest = re.findall(r"([\d.]+) \(\s*[\d.]+x\)", line)
        for prog, t in zip(progs, rest):
            t = float(t)
            prog.points[size] = (t, size / t / 1e3 * busbw_factor(coll, n))
    gpus = "%d x %s" % (len(devices), devices[0][0]) if devices else "%d GPUs" % n
    return "%s, %s, p2p (NVLS off)" % (coll, gpus)


def nccl_tests_log(text, found):
    """cdsl-perf's stdout, or nccl-tests' own (then the NCCL reference)."""
    d = nccl_tests_format.parse(text)
    start = next((c.split(":", 1)[1].strip() for c in d["comments"] if c.startswith("# Collective test starting:")), "?")
    is_nccl = any(c.startswith("# nccl-tests version") for c in d["comments"])
    name = "nccl" if is_nccl else start
    s = found.setdefault(name, Series(name, "NCCL (%s)" % start if is_nccl else start, "nccl" if is_nccl else "cdsl"))
    for r in d["rows"]:
        o = r["out_of_place"]
        if o["time"] is not None and o["busbw"] is not None:
            s.points[r["size"]] = (o["time"], o["busbw"])
    cdsl = next((c for c in d["comments"] if c.startswith("# cdsl: ")), "")
    coll = re.search(r"implements (\w+)", cdsl)
    dev = d["devices"][0]["name"] if d["devices"] else "?"
    ngpu = len({(x["device"], x["bus"]) for x in d["devices"]})
    return "%s, %d ranks on %d x %s" % (coll.group(1) if coll else "?", len(d["devices"]), ngpu, dev)


def results_file(path, found):
    """cdsl-perf -F: JSON or CSV."""
    if path.endswith(".json"):
        with open(path, encoding="utf-8") as f:
            d = json.load(f)
        name = d["program"]["name"]
        s = found.setdefault(name, Series(name, name, "cdsl"))
        for r in d["results"]:
            o = r["out_of_place"] or {}
            if o.get("time_us") is not None:
                s.points[r["size"]] = (o["time_us"], o["busbw_gbs"])
        return "%s, %d ranks on %s (%s)" % (d["program"]["collective"], d["program"]["nranks"],
                                             d["devices"][0]["name"], d["backend"])
    with open(path, newline="", encoding="utf-8") as f:
        rows = [r for r in csv.DictReader(f) if r["placement"] == "out-of-place"]
    for r in rows:
        s = found.setdefault(r["program"], Series(r["program"], r["program"], "cdsl"))
        if r["time_us"]:
            s.points[int(r["size"])] = (float(r["time_us"]), float(r["busbw_gbs"]))
    r = rows[0]
    return "%s, %s ranks on %s (%s)" % (r["collective"], r["nranks"], r["device"], r["backend"])


def read(path, found):
    if path.endswith(".json") or path.endswith(".csv"):
        return results_file(path, found)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if re.search(r"^# time in us per \w+ \(\d+ GPUs\)", text, re.M):
        return compare_table(text, found)
    return nccl_tests_log(text, found)


def main(argv):
    if len(argv) < 3:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    out, found, titles = argv[1], {}, []
    os.makedirs(out, exist_ok=True)
    for path in argv[2:]:
        before = {k: len(v.points) for k, v in found.items()}
        titles.append(read(path, found))
        if all(len(v.points) == before.get(k, 0) for k, v in found.items()):
            print("plot_data: %s: no measured rows (sim output has none); skipped" % path, file=sys.stderr)
    nccl = found.get("nccl")
    with open(os.path.join(out, "series.txt"), "w", encoding="utf-8") as idx:
        for s in sorted(found.values(), key=lambda s: (s.kind != "nccl", s.name)):
            if not s.points:
                continue
            with open(os.path.join(out, s.name + ".dat"), "w", encoding="utf-8") as f:
                for size in sorted(s.points):
                    f.write("%d %.6g %.6g\n" % (size, *s.points[size]))
            if nccl and s is not nccl:
                with open(os.path.join(out, s.name + ".ratio"), "w", encoding="utf-8") as f:
                    for size in sorted(s.points):
                        if size in nccl.points:
                            f.write("%d %.6g\n" % (size, nccl.points[size][0] / s.points[size][0]))
            idx.write("%s\t%s\t%s\n" % (s.name, s.label, s.kind))
        idx.write("title\t%s\n" % "; ".join(dict.fromkeys(titles)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
