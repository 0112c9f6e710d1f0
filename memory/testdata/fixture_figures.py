#!/usr/bin/env python3
"""Independent figures for memory/fixtures_test.go.

Reads the real snapshots with the standard library's pickle and computes,
from the definitions in docs/json-output.md ("gpudx mem"), the figures the
Go test asserts; prints them as Go literals to paste into fixtures_test.go.

    python3 memory/testdata/fixture_figures.py ../shared/fixtures/snapshots
"""
import os
import pickle
import sys

HIDE_NAME = ["unwind::unwind", "CapturedTraceback::gather", "gather_with_cpp", "_start",
             "__libc_start_main", "PyEval_", "PyObject_", "PyFunction_"]
HIDE_FILE = ["core/boxing", "/Register", "/Redispatch", "pythonrun.c", "Modules/main.c",
             "Objects/call.c", "Objects/methodobject.c", "pycore_ceval.h", "ceval.c", "cpython/abstract.h"]


def line(f):
    n = f.get("line")
    return n if isinstance(n, int) and 0 < n < 2**63 else 0


def kept(frames):
    return [f for f in frames or [] if not any(h in f["name"] for h in HIDE_NAME)
            and not any(h in f["filename"] for h in HIDE_FILE)]


def internal(f):
    fn = f["filename"]
    return (fn in ("", "??") or fn.endswith((".cpp", ".h", ".c", ".cc", ".cu")) or "/torch/" in fn
            or "\\torch\\" in fn or fn.startswith("torch/") or "<frozen " in fn)


def site(frames):
    k = kept(frames)
    if not k:
        return "<no stack recorded>"
    f = next((f for f in k if not internal(f)), k[0])
    return "%s (%s)" % (f["name"], f["filename"]) if line(f) == 0 else "%s (%s:%d)" % (f["name"], f["filename"], line(f))


def block_frames(b):
    if "frames" in b:
        return b["frames"]
    h = b.get("history") or []
    return h[0].get("frames", []) if h else []


def figures(segs):
    f = dict(reserved=0, allocated=0, active=0, inactive=0, requested=0, releasable=0, stranded=0,
             largest=0, segments=0, blocks=0, full=0, mixed=0, free=0, aa=[0, 0], pf=[0, 0], ia=[0, 0],
             exp=0, expb=0)
    alloc = []
    for s in segs:
        f["segments"] += 1
        f["reserved"] += s["total_size"]
        if s.get("is_expandable"):
            f["exp"] += 1
            f["expb"] += s["total_size"]
        used = nfree = freeb = 0
        for b in s["blocks"]:
            f["blocks"] += 1
            if b["state"] == "inactive":
                nfree += 1
                freeb += b["size"]
                f["ia"][0] += 1
                f["ia"][1] += b["size"]
                f["largest"] = max(f["largest"], b["size"])
                continue
            used += 1
            f["active"] += b["size"]
            f["requested"] += b.get("requested_size", 0)
            if b["state"] == "active_allocated":
                f["aa"][0] += 1
                f["aa"][1] += b["size"]
                f["allocated"] += b["size"]
                alloc.append(b["size"])
            else:
                f["pf"][0] += 1
                f["pf"][1] += b["size"]
        f["inactive"] += freeb
        if used == 0:
            f["free"] += 1
            f["releasable"] += freeb
        elif nfree == 0:
            f["full"] += 1
        else:
            f["mixed"] += 1
            f["stranded"] += freeb
    f["rounding"] = max(f["active"] - f["requested"], 0)
    f["frag"] = 0.0 if f["inactive"] == 0 else 1 - f["largest"] / f["inactive"]
    alloc.sort()
    f["typical"] = alloc[(len(alloc) - 1) // 2] if alloc else 0
    f["small"] = sum(1 for s in segs for b in s["blocks"] if b["state"] == "inactive" and b["size"] < f["typical"])
    return f


def go_figures(f):
    return ("Figures{ReservedBytes: %d, AllocatedBytes: %d, ActiveBytes: %d, InactiveBytes: %d, RequestedBytes: %d, "
            "RoundingBytes: %d, ReleasableBytes: %d, StrandedBytes: %d, LargestFreeBlockBytes: %d, Fragmentation: %r, "
            "TypicalRequestBytes: %d, SmallFreeBlocks: %d, Segments: %d, Blocks: %d, "
            "SegmentStates: SegStates{Full: %d, Mixed: %d, Free: %d}, "
            "BlockStates: BlockCount{ActiveAllocated: CountBytes{%d, %d}, ActivePendingFree: CountBytes{%d, %d}, Inactive: CountBytes{%d, %d}}, "
            "ExpandableSegments: %d, ExpandableBytes: %d}") % (
        f["reserved"], f["allocated"], f["active"], f["inactive"], f["requested"], f["rounding"], f["releasable"],
        f["stranded"], f["largest"], f["frag"], f["typical"], f["small"], f["segments"], f["blocks"],
        f["full"], f["mixed"], f["free"], *f["aa"], *f["pf"], *f["ia"], f["exp"], f["expb"])


def group(items, top):
    g = {}
    for name, size in items:
        e = g.setdefault(name, [0, 0])
        e[0] += size
        e[1] += 1
    out = sorted(g.items(), key=lambda kv: (-kv[1][0], kv[0]))[:top]
    return "[]siteFig{" + ", ".join("{%s, %d, %d}" % (go_str(n), b, c) for n, (b, c) in out) + "}"


def go_str(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def trace_figures(segs_by_dev, traces, points=1000):
    """Backward replay per device: peak, alive at the peak, timeline checksum."""
    best = None
    moves = False
    timelines = []
    for d, tr in enumerate(traces):
        if not tr:
            continue
        end = sum(b.get("requested_size", 0) for s in segs_by_dev.get(d, []) for b in s["blocks"] if b["state"] != "inactive")
        after = [0] * len(tr)
        cur = end
        for i in range(len(tr) - 1, -1, -1):
            after[i] = cur
            e = tr[i]
            if e["action"] == "alloc":
                moves = True
                cur = max(cur - e["size"], 0)
            elif e["action"] == "free_completed":
                moves = True
                cur += e["size"]
        p = max(range(len(tr)), key=lambda i: (after[i], -i))
        if best is None or after[p] > best[1]:
            best = (d, after[p], p)
        w = -(-len(tr) // points)
        pts = [max(range(k, min(k + w, len(tr))), key=lambda i: (after[i], -i)) for k in range(0, len(tr), w)]
        timelines.append((d, len(pts), sum(pts), sum(after[i] for i in pts)))
    if not moves:
        return None, None
    d, peak, p = best
    tr = traces[d]
    alive = []
    for i in range(p + 1):
        e = tr[i]
        if e["action"] == "alloc" and not any(tr[j]["action"] == "free_completed" and tr[j]["addr"] == e["addr"] for j in range(i + 1, p + 1)):
            alive.append((site(e.get("frames")), e["size"]))
    seen_alloc = set()
    for i, e in enumerate(tr):
        if e["action"] == "free_completed" and i > p and e["addr"] not in seen_alloc:
            alive.append((site(e.get("frames")), e["size"]))
        if e["action"] == "alloc":
            seen_alloc.add(e["addr"])
    mentioned = {e["addr"] for e in tr if e["action"] in ("alloc", "free_completed")}
    for s in segs_by_dev.get(d, []):
        for b in s["blocks"]:
            if b["state"] != "inactive" and b["address"] not in mentioned:
                alive.append((site(block_frames(b)), b.get("requested_size", 0)))
    return (d, peak, tr[p].get("time_us", 0), p, group(alive, 3)), timelines


def request(segs_by_dev, req):
    dev = max(sorted(segs_by_dev), key=lambda d: (sum(s["total_size"] for s in segs_by_dev[d]), -d))
    small = req <= 1 << 20
    largest = cache = allocated = reserved = 0
    for s in segs_by_dev[dev]:
        reserved += s["total_size"]
        ok = (s["segment_type"] == "small") == small and tuple(s.get("segment_pool_id", (0, 0))) == (0, 0) and s["stream"] == 0
        for b in s["blocks"]:
            if b["state"] != "inactive":
                allocated += b["size"]
            elif ok:
                cache += b["size"]
                largest = max(largest, b["size"])
    return "requestFig{Device: %d, Largest: %d, Cache: %d, Reserved: %d, Allocated: %d}" % (dev, largest, cache, reserved, allocated)


def main(root):
    for name in sorted(os.listdir(root)):
        if not name.endswith((".pickle", ".pkl")):
            continue
        with open(os.path.join(root, name), "rb") as fh:
            raw = fh.read()
        data = pickle.loads(raw)
        segs = data if isinstance(data, list) else data["segments"]
        traces = [] if isinstance(data, list) else data.get("device_traces", [])
        by_dev = {}
        for s in segs:
            a = s["address"]
            for b in s["blocks"]:
                b.setdefault("address", a)
                a += b["size"]
            by_dev.setdefault(s["device"], []).append(s)
        # Distinct stack contents; a line outside 1..2^63-1 is "unknown" (0).
        def stack_key(fl):
            return tuple((f["name"], f["filename"], f["line"] if 0 < f["line"] < 2**63 else 0) for f in fl)
        stacks = set()
        for s in segs:
            for fl in [s.get("frames")] + [block_frames(b) for b in s["blocks"]]:
                if fl:
                    stacks.add(stack_key(fl))
        for tr in traces:
            for e in tr:
                if e.get("frames"):
                    stacks.add(stack_key(e["frames"]))
        print("\t{\n\t\tfile: %s," % go_str(name))
        fmt = "%s, pickle protocol %d" % ("segment list" if isinstance(data, list) else "dict", raw[1] if raw[0] == 0x80 else 0)
        settings = "" if isinstance(data, list) else data.get("allocator_settings")
        conf = ""
        if settings:
            conf = ", AllocatorConf: %s, Expandable: ptrBool(%s)" % (
                go_str(settings.get("PYTORCH_CUDA_ALLOC_CONF", "")), str(bool(settings.get("expandable_segments"))).lower())
        print("\t\tinfo: Info{Segments: %d, Blocks: %d, TraceEvents: %d, Stacks: %d, Format: %s%s}," % (
            len(segs), sum(len(s["blocks"]) for s in segs), sum(len(t) for t in traces), len(stacks), go_str(fmt), conf))
        print("\t\tdevices: []deviceFig{")
        for d in sorted(by_dev):
            pools = {}
            for s in by_dev[d]:
                pools.setdefault((tuple(s.get("segment_pool_id", (0, 0))), s["segment_type"]), []).append(s)
            keys = sorted(pools, key=lambda k: (k[0] != (0, 0), k[0], k[1] == "small"))
            pfs = [figures(pools[k]) for k in keys]
            df = figures(by_dev[d])
            df["small"] = sum(p["small"] for p in pfs)  # each pool against its own typical request
            print("\t\t\t{%d, %s, []Figures{" % (d, go_figures(df)))
            for pf in pfs:
                print("\t\t\t\t%s," % go_figures(pf))
            print("\t\t\t}},")
        print("\t\t},")
        active = [(site(block_frames(b)), b["size"]) for s in segs for b in s["blocks"] if b["state"] != "inactive"]
        print("\t\ttop: %s," % group(active, 3))
        peak, tls = trace_figures(by_dev, traces)
        if peak:
            print("\t\tpeak: &peakFig{%d, %d, %d, %d, %s}," % peak)
            print("\t\ttimeline: []timelineFig{%s}," % ", ".join("{%d, %d, %d, %d}" % t for t in tls))
        print("\t\trequest: %s," % request(by_dev, 512 << 20))
        print("\t},")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "../shared/fixtures/snapshots")
