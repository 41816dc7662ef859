#!/usr/bin/env python3
"""bench/targets.py - the performance targets, judged from one bench/compare.sh call's raw outputs.

    bench/targets.py LOGDIR

LOGDIR holds what compare.sh wrote: anchors.txt (bench/anchors.cu's `anchor NAME VALUE UNIT`
lines), nccl_<coll>[_graph].txt (bench/nccl_allgather.py), cdsl_<program>.txt (`cdslrun --bench`
rows: size count type time algbw busbw #wrong) and gpus.txt (how many GPUs it saw). Prints one
row per target and size: what was measured, the ratio the target is stated in, and PASS, FAIL
or n/a (a figure is missing). When gpus.txt or the anchors say one GPU, every verdict is
n/a-1gpu: the ranks shared one GPU and the anchors are copies within it, so no figure is
comparable with the two-GPU targets (the ratios are still printed, for comparing runs of the
same kind).

Targets (2 x H200):
  T1 allgather_nvls (p2p flavour), 1-16 KiB: <= 2.5 us and <= 0.35 x NCCL's CUDA-graph time
  T2 allgather, every size 1 KiB - 1 GiB: NCCL's better time / cdsl's best program >= 1.3
  T3 barrier_switch <= 1.9 us, and <= one graph launch + one bare barrier round + 0.1 us
     (empty_graph_us + the faster of barrier_release/relaxed_round_us)
  T4 allgather at 1 GiB: busbw >= 0.95 x cudaMemcpyPeer (memcpy_peer_GBps)
  T5 allreduce, reducescatter at 1 GiB: busbw >= 0.9 x cudaMemcpyPeer
  T6 allreduce, reducescatter at <= 64 KiB: time <= 0.5 x NCCL's CUDA-graph time
"""
import glob
import os
import sys

KIB, GIB = 1 << 10, 1 << 30


def read_rows(path):
    """{size: (time_us, busbw, wrong)} from nccl-tests-style rows (wrong: the row's #wrong
    column as printed); {} when the file is missing."""
    rows = {}
    try:
        with open(path) as f:
            for line in f:
                p = line.split()
                if len(p) >= 7 and not line.startswith("#") and p[0].isdigit():
                    try:
                        rows[int(p[0])] = (float(p[3]), float(p[5]), p[6])
                    except ValueError:
                        pass
    except OSError:
        pass
    return rows


def read_anchors(path):
    out = {}
    try:
        with open(path) as f:
            for line in f:
                p = line.split()
                if len(p) == 4 and p[0] == "anchor":
                    out[p[1]] = float(p[2])
    except OSError:
        pass
    return out


def read_gpus(path):
    """The GPU count compare.sh saw (gpus.txt); 2 when it did not say."""
    try:
        with open(path) as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 2


def collective_of(path):
    """The collective a cdslrun --bench log names in its header."""
    try:
        with open(path) as f:
            head = f.readline()
    except OSError:
        return None
    parts = head.split()
    return parts[2].rstrip(",") if len(parts) > 2 and head.startswith("# ") else None


class Table:
    def __init__(self, one_gpu):
        self.one_gpu = one_gpu
        self.count = {"PASS": 0, "FAIL": 0, "n/a": 0}

    def row(self, target, what, measured, ratio, ok):
        if ok is None:
            verdict = "n/a"
        elif self.one_gpu:
            verdict = "n/a-1gpu"
        else:
            verdict = "PASS" if ok else "FAIL"
        self.count[verdict if verdict in self.count else "n/a"] += 1
        print("%-4s %-50s %-34s %-16s %s" % (target, what, measured, ratio, verdict))


def fmt(v, unit=""):
    return "-" if v is None else "%.2f%s" % (v, unit)


def size_name(s):
    return "%d GiB" % (s // GIB) if s >= GIB and s % GIB == 0 else \
        "%d MiB" % (s >> 20) if s >= 1 << 20 and s % (1 << 20) == 0 else "%d KiB" % (s // KIB)


def best(progs, size):
    """(time, busbw, name) of the fastest program at size, or None."""
    got = [(rows[size][0], rows[size][1], name) for name, rows in progs.items() if size in rows]
    return min(got) if got else None


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: bench/targets.py LOGDIR")
    d = sys.argv[1]
    anchors = read_anchors(os.path.join(d, "anchors.txt"))
    one_gpu = anchors.get("gpus", 2) < 2 or read_gpus(os.path.join(d, "gpus.txt")) < 2
    nccl = {c: (read_rows(os.path.join(d, "nccl_%s.txt" % c)), read_rows(os.path.join(d, "nccl_%s_graph.txt" % c)))
            for c in ("allgather", "reducescatter", "allreduce")}
    progs = {"allgather": {}, "reducescatter": {}, "allreduce": {}, "barrier": {}}
    for path in sorted(glob.glob(os.path.join(d, "cdsl_*.txt"))):
        coll = collective_of(path)
        if coll in progs:
            progs[coll][os.path.basename(path)[5:-4]] = read_rows(path)
    peer = anchors.get("memcpy_peer_GBps", anchors.get("local_memcpy_GBps"))
    t = Table(one_gpu)
    print("# performance targets%s" % (": ONE GPU, ranks sharing it - NOT comparable with the 2-GPU targets"
                                      if one_gpu else ", 2 GPUs"))
    print("%-4s %-50s %-34s %-16s %s" % ("#", "what", "measured", "ratio", "verdict"))

    def nccl_time(coll, size, graph_only):
        calls, graph = nccl[coll]
        ts = [r[size][0] for r in ((graph,) if graph_only else (calls, graph)) if size in r]
        return min(ts) if ts else None

    ag = progs["allgather"].get("allgather_nvls", {})
    for s in (1 * KIB, 2 * KIB, 4 * KIB, 8 * KIB, 16 * KIB):
        us, ng = ag.get(s, (None, None))[0], nccl_time("allgather", s, True)
        ratio = us / ng if us and ng else None
        t.row("T1", "allgather_nvls %s <= 2.5 us, <= 0.35x nccl-graph" % size_name(s),
              "%s vs nccl-graph %s" % (fmt(us, " us"), fmt(ng, " us")), fmt(ratio, "x"),
              None if us is None or ratio is None else us <= 2.5 and ratio <= 0.35)

    sizes = sorted(s for rows in progs["allgather"].values() for s in rows if KIB <= s <= GIB)
    for s in sorted(set(sizes)):
        b, n = best(progs["allgather"], s), nccl_time("allgather", s, False)
        x = n / b[0] if b and n and b[0] > 0 else None
        t.row("T2", "allgather %s: nccl-best / cdsl-best >= 1.3" % size_name(s),
              "%s (%s) vs %s" % (fmt(b and b[0], " us"), b[2] if b else "-", fmt(n, " us")), fmt(x, "x"),
              None if x is None else x >= 1.3)

    bar = progs["barrier"].get("barrier_switch", {})
    bs = bar[min(bar)][0] if bar else None
    rounds = [anchors[k] for k in ("barrier_release_round_us", "barrier_relaxed_round_us") if k in anchors]
    floor = anchors["empty_graph_us"] + min(rounds) if rounds and "empty_graph_us" in anchors else None
    t.row("T3", "barrier_switch <= 1.9 us", fmt(bs, " us"), "-", None if bs is None else bs <= 1.9)
    t.row("T3", "barrier_switch <= launch + bare round + 0.1 us", "%s vs floor %s" % (fmt(bs, " us"), fmt(floor, " us")),
          fmt(bs - floor if bs is not None and floor is not None else None, " us over"),
          None if bs is None or floor is None else bs <= floor + 0.1)

    for coll, want, tag in (("allgather", 0.95, "T4"), ("allreduce", 0.9, "T5"), ("reducescatter", 0.9, "T5")):
        b = best(progs[coll], GIB)
        x = b[1] / peer if b and peer else None
        t.row(tag, "%s 1 GiB busbw >= %.2fx memcpy-peer" % (coll, want),
              "%s (%s) vs %s" % (fmt(b and b[1], " GB/s"), b[2] if b else "-", fmt(peer, " GB/s")), fmt(x, "x"),
              None if x is None else x >= want)

    for coll in ("allreduce", "reducescatter"):
        for s in sorted(set(k for rows in progs[coll].values() for k in rows if KIB <= k <= 64 * KIB)):
            b, n = best(progs[coll], s), nccl_time(coll, s, True)
            x = b[0] / n if b and n else None
            t.row("T6", "%s %s <= 0.5x nccl-graph" % (coll, size_name(s)),
                  "%s (%s) vs %s" % (fmt(b and b[0], " us"), b[2] if b else "-", fmt(n, " us")), fmt(x, "x"),
                  None if x is None else x <= 0.5)
    print("# anchors: " + ", ".join("%s %.3f" % kv for kv in sorted(anchors.items())))
    print("# %d PASS, %d FAIL, %d n/a" % (t.count["PASS"], t.count["FAIL"], t.count["n/a"]))


if __name__ == "__main__":
    main()
