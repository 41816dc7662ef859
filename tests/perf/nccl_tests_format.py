#!/usr/bin/env python3
"""A parser for nccl-tests' output (all_gather_perf, all_reduce_perf, reduce_scatter_perf, ...),
written the way scripts that collect those logs read them, and used on cdsl-perf's output too.

    python3 tests/perf/nccl_tests_format.py LOG          # prints what it read, as JSON

The output has three parts (nccl-tests' src/util.cu writes them):
  header  "# nThread 1 nGpus 8 minBytes 8 maxBytes 134217728 step: 2(factor) warmup iters: 5
          iters: 20 agg iters: 1 validation: 1 graph: 0", "# Using devices" and one
          "#  Rank  0 Group  0 Pid 1234 on host device  0 [0000:18:00] NVIDIA H200" per rank
          (older versions print the bus id as [0x18]);
  rows    size count type redop root, then time algbw busbw #wrong out of place and the same
          four in place: whitespace-separated, 13 fields; a figure may be "N/A" (nccl-tests
          prints it for #wrong when -c 0; cdsl-perf also for sim times and unsupported in-place
          columns), read here as None;
  footer  "# Out of bounds values : 0 OK" and "# Avg bus bandwidth    : 123.4" (a number, or
          N/A from cdsl-perf on sim).
Any other "#" line is a comment. Python's standard library only.
"""
import json
import re
import sys

FIELDS = ("time", "algbw", "busbw", "wrong")
PLACEMENTS = ("out_of_place", "in_place")

_DEVICE = re.compile(r"^#\s+Rank\s+(\d+)\s+Group\s+(\d+)\s+Pid\s+(\d+)\s+on\s+(\S+)\s+device\s+(-?\d+)\s+"
                     r"\[([^\]]*)\]\s+(.*?)\s*$")
_FOOTER = re.compile(r"^#\s*(Out of bounds values|Avg bus bandwidth)\s*:\s*(\S+)\s*(.*?)\s*$")


def _number(text):
    """A figure of a row: an int or float, or None for N/A."""
    if text == "N/A":
        return None
    value = float(text)
    return int(value) if value.is_integer() and "." not in text and "e" not in text.lower() else value


def _settings(line):
    """'# nThread 1 nGpus 8 ... step: 2(factor) warmup iters: 5 ...' as a dict."""
    body = line.lstrip("#").strip()
    out = {}
    for key, value in re.findall(r"([A-Za-z][A-Za-z ]*?):?\s+(-?[0-9][^ ]*)", body):
        out[key.strip()] = value
    return out


def parse_row(line):
    fields = line.split()
    if len(fields) < 13:
        raise ValueError("a row has 13 fields, not %d: %r" % (len(fields), line))
    row = {"size": int(fields[0]), "count": int(fields[1]), "type": fields[2], "redop": fields[3],
           "root": int(fields[4])}
    for k, placement in enumerate(PLACEMENTS):
        row[placement] = {name: _number(fields[5 + 4 * k + i]) for i, name in enumerate(FIELDS)}
    return row


def parse(text):
    result = {"settings": {}, "devices": [], "rows": [], "footer": {}, "comments": []}
    for line in text.splitlines():
        if not line.strip():
            continue
        if not line.startswith("#"):
            result["rows"].append(parse_row(line))
            continue
        device, footer = _DEVICE.match(line), _FOOTER.match(line)
        if device:
            rank, group, pid, host, dev, bus, name = device.groups()
            result["devices"].append({"rank": int(rank), "group": int(group), "pid": int(pid), "host": host,
                                      "device": int(dev), "bus": bus, "name": name})
        elif footer:
            key, value, verdict = footer.groups()
            key = "out_of_bounds" if key.startswith("Out") else "avg_bus_bandwidth"
            result["footer"][key] = {"value": None if value == "N/A" else float(value), "verdict": verdict}
        elif line.lstrip("# ").startswith("nThread"):
            result["settings"] = _settings(line)
        else:
            result["comments"].append(line)
    if not result["rows"]:
        raise ValueError("no rows")
    if set(result["footer"]) != {"out_of_bounds", "avg_bus_bandwidth"}:
        raise ValueError("no footer (Out of bounds values, Avg bus bandwidth)")
    return result


def main(argv):
    if len(argv) != 2:
        print("usage: nccl_tests_format.py LOG", file=sys.stderr)
        return 2
    with open(argv[1], encoding="utf-8") as f:
        print(json.dumps(parse(f.read()), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
