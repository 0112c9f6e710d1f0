#!/usr/bin/env python3
"""gensnap.py: write synthetic PyTorch CUDA memory snapshots with known figures.

Standard library only. A small model of PyTorch's CUDA caching allocator
(per device, per stream, large/small pools, optional private pools and
expandable segments, 512-byte rounding, best fit, splitting, merging, cache
flush before an OOM) runs a training-like workload and records the same
trace ring buffer PyTorch records. The final state is written as a pickle in
the exact shape of a chosen PyTorch version (key order, memo sharing of frame
dicts and frame lists, fresh "N/A" strings, protocol 2, 4 or 5, framing),
streamed so that files of several GB can be written in bounded memory.

Next to the snapshot, <out>.expected.json holds the figures gpudx must report
(the JSON field names of memory/report.go), computed here straight from the
definitions in the gpudx mem specification. The OOM figures come from the
simulator's own state at the moment of the OOM, not from replaying the
trace, so the two methods check each other.

Small outputs are verified: the streamed bytes must equal pickle.dumps() of
the same object tree, and the figures recomputed from pickle.loads() of the
file must equal the figures computed from the simulator.

Examples:
  gensnap.py --out /tmp/s.pickle --scenario steady --steps 3
  gensnap.py --out /tmp/f.pickle --scenario fragmentation --layout 2.8 --after-oom
  gensnap.py --out /tmp/big.pickle --target-bytes 1GB --no-expected
"""

import argparse
import array
import bisect
import gzip
import io
import json
import os
import pickle
import random
import shlex
import struct
import sys
import time

KiB = 1024
MiB = 1024 * KiB
GiB = 1024 * MiB

MIN_BLOCK = 512
SMALL_SIZE = 1 * MiB  # requests up to this go to the small pool
SMALL_BUFFER = 2 * MiB  # small pool segment size
LARGE_BUFFER = 20 * MiB  # segment size for 1-10 MiB requests
MIN_LARGE_ALLOC = 10 * MiB
ROUND_LARGE = 2 * MiB

LAYOUTS = ("2.0", "2.1", "2.2", "2.3", "2.5", "2.8", "2.10", "list")

# action codes (also used by the normalised form)
A_ALLOC, A_FREE_REQ, A_FREE_DONE, A_SEG_ALLOC, A_SEG_FREE, A_SEG_MAP, A_SEG_UNMAP, A_SNAPSHOT, A_OOM = range(9)
ACTION_NAMES = ("alloc", "free_requested", "free_completed", "segment_alloc", "segment_free",
                "segment_map", "segment_unmap", "snapshot", "oom")
ACTION_CODE = {n: i for i, n in enumerate(ACTION_NAMES)}

# block states
INACTIVE, ALLOCATED, PENDING = 0, 1, 2
STATE_NAMES = ("inactive", "active_allocated", "active_pending_free")
STATE_CODE = {n: i for i, n in enumerate(STATE_NAMES)}

DEFAULT_POOL = (0, 0)
U64_MAX = (1 << 64) - 1


def round512(n):
    if n < MIN_BLOCK:
        return MIN_BLOCK
    return (n + MIN_BLOCK - 1) // MIN_BLOCK * MIN_BLOCK


def segment_size_for(size):
    if size <= SMALL_SIZE:
        return SMALL_BUFFER
    if size < MIN_LARGE_ALLOC:
        return LARGE_BUFFER
    return (size + ROUND_LARGE - 1) // ROUND_LARGE * ROUND_LARGE


def parse_size(s):
    s = s.strip()
    units = [("KiB", KiB), ("MiB", MiB), ("GiB", GiB), ("TiB", 1024 * GiB),
             ("KB", 1000), ("MB", 1000 ** 2), ("GB", 1000 ** 3), ("TB", 1000 ** 4),
             ("K", KiB), ("M", MiB), ("G", GiB), ("B", 1)]
    for u, m in units:
        if s.endswith(u):
            return int(float(s[: -len(u)]) * m)
    return int(s)


# ---------------------------------------------------------------------------
# Allocation sites and stacks

class Stacks:
    """Registry of frames (name, filename, line) and stacks (tuples of frame ids).

    Lines are stored as written to the file (2**64-1 stays as is)."""

    def __init__(self, cpp, paths):
        self.cpp = cpp
        self.frames = []  # frame id -> (name, filename, line)
        self.frame_ids = {}
        self.stacks = []  # stack id -> tuple of frame ids
        self.stack_ids = {}
        self.by_site = {}  # template name -> stack id
        if paths == "windows":
            root = "C:\\Users\\alice\\llm"
            self.proj = lambda f: root + "\\" + f
            self.torch = lambda f: root + "\\.venv\\Lib\\site-packages\\torch\\" + f.replace("/", "\\")
        else:
            self.proj = lambda f: "/home/alice/llm/" + f
            self.torch = lambda f: "/opt/conda/lib/python3.11/site-packages/torch/" + f
        self._build()

    def frame(self, name, filename, line):
        key = (name, filename, line)
        fid = self.frame_ids.get(key)
        if fid is None:
            fid = len(self.frames)
            self.frames.append(key)
            self.frame_ids[key] = fid
        return fid

    def stack(self, frames):
        ids = tuple(self.frame(*f) for f in frames)
        sid = self.stack_ids.get(ids)
        if sid is None:
            sid = len(self.stacks)
            self.stacks.append(ids)
            self.stack_ids[ids] = sid
        return sid

    def _build(self):
        P = self.proj
        T = self.torch
        pyc = "/usr/local/src/conda/python-3.11.7/"
        MOD = [("_call_impl", T("nn/modules/module.py"), 1762),
               ("_wrapped_call_impl", T("nn/modules/module.py"), 1751)]
        MAIN = [("main", P("train.py"), 188), ("<module>", P("train.py"), 215)]
        if not self.cpp:
            MAIN = MAIN + [("_run_code", "<frozen runpy>", 88),
                           ("_run_module_as_main", "<frozen runpy>", 198)]
        STEP = [("train_step", P("train.py"), 97)] + MAIN
        TRANS = [("forward", P("model.py"), 131)] + MOD + STEP
        ATTN_IN = [("forward", P("model.py"), 87)] + MOD + TRANS
        MLP_IN = [("forward", P("model.py"), 88)] + MOD + TRANS
        LIN = [("forward", T("nn/modules/linear.py"), 125)] + MOD
        ADAM = [("step", T("optim/adam.py"), 247), ("_use_grad", T("optim/optimizer.py"), 79),
                ("wrapper", T("optim/optimizer.py"), 487), ("train_step", P("train.py"), 107)] + MAIN
        py = {
            "tokens": [("train_step", P("train.py"), 92)] + MAIN,
            "embed": [("embedding", T("nn/functional.py"), 2551),
                      ("forward", T("nn/modules/sparse.py"), 190)] + MOD +
                     [("forward", P("model.py"), 121)] + MOD + STEP,
            "norm": [("forward", P("model.py"), 24)] + MOD + ATTN_IN,
            "qkv": LIN + [("forward", P("model.py"), 57)] + MOD + ATTN_IN,
            "attn": [("forward", P("model.py"), 61)] + MOD + ATTN_IN,
            "attn_proj": LIN + [("forward", P("model.py"), 63)] + MOD + ATTN_IN,
            "kv_cache": [("forward", P("model.py"), 66)] + MOD + ATTN_IN,
            "resid": [("forward", P("model.py"), 87)] + MOD + TRANS,
            "mlp_up": LIN + [("forward", P("model.py"), 76)] + MOD + MLP_IN,
            "mlp_act": [("forward", P("model.py"), 77)] + MOD + MLP_IN,
            "mlp_down": LIN + [("forward", P("model.py"), 78)] + MOD + MLP_IN,
            "logits": LIN + [("forward", P("model.py"), 134)] + MOD + STEP,
            "loss": [("cross_entropy", T("nn/functional.py"), 3494),
                     ("train_step", P("train.py"), 99)] + MAIN,
            "hook": [("<lambda>", P("train.py"), U64_MAX),
                     ("_call_impl", T("nn/modules/module.py"), 1805)] + MOD[1:] +
                    [("forward", P("model.py"), 131)] + MOD + STEP,
            "params": [("convert", T("nn/modules/module.py"), 1340),
                       ("_apply", T("nn/modules/module.py"), 928),
                       ("_apply", T("nn/modules/module.py"), 901),
                       ("_apply", T("nn/modules/module.py"), 901),
                       ("to", T("nn/modules/module.py"), 1355),
                       ("main", P("train.py"), 161)] + MAIN[1:],
            "opt_state": [("_init_group", T("optim/adam.py"), 176)] + ADAM,
            "opt_tmp": [("_multi_tensor_adam", T("optim/adam.py"), 713),
                        ("adam", T("optim/adam.py"), 945)] + ADAM,
            "prefetch": [("_prefetch", P("data.py"), 41), ("__next__", P("data.py"), 58),
                         ("main", P("train.py"), 178)] + MAIN[1:],
            "graph": [("forward", P("model.py"), 131)] + MOD +
                     [("capture", P("graphs.py"), 27), ("main", P("train.py"), 170)] + MAIN[1:],
            "big_eval": LIN + [("forward", P("model.py"), 134)] + MOD +
                        [("evaluate", P("train.py"), 140), ("main", P("train.py"), 196)] + MAIN[1:],
            # free sites (context="all" records where a tensor died)
            "free_fwd": [("forward", P("model.py"), 89)] + MOD + TRANS,
            "free_step": [("train_step", P("train.py"), 110)] + MAIN,
            "free_opt": [("zero_grad", T("optim/optimizer.py"), 955),
                         ("train_step", P("train.py"), 95)] + MAIN,
        }
        # engine-side allocations: no Python frames
        engine = ["backward", "grad", "free_bwd"]
        cpp_alloc = [
            ("torch::unwind::unwind()", "??", 0),
            ("torch::CapturedTraceback::gather(bool, bool, bool)", "??", 0),
            ("torch::cuda::(anonymous namespace)::gather_with_cpp()", "memory_snapshot.cpp", 0),
            ("c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(signed char, unsigned long, CUstream_st*)",
             "CUDACachingAllocator.cpp", 0),
            ("c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::malloc(void**, signed char, unsigned long, CUstream_st*)", "", 0),
            ("c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::allocate(unsigned long)", "", 0),
            ("at::detail::empty_generic(c10::ArrayRef<long>, c10::Allocator*, c10::DispatchKeySet, c10::ScalarType, std::optional<c10::MemoryFormat>)", "??", 0),
            ("at::detail::empty_cuda(c10::ArrayRef<long>, c10::ScalarType, std::optional<c10::Device>, std::optional<c10::MemoryFormat>)", "??", 0),
            ("at::(anonymous namespace)::(anonymous namespace)::wrapper_CUDA_memory_format_empty(c10::ArrayRef<c10::SymInt>, std::optional<c10::ScalarType>, std::optional<c10::Layout>, std::optional<c10::Device>, std::optional<bool>, std::optional<c10::MemoryFormat>)",
             "RegisterCUDA_0.cpp", 0),
            ("at::_ops::empty_memory_format::redispatch(c10::DispatchKeySet, c10::ArrayRef<c10::SymInt>, std::optional<c10::ScalarType>, std::optional<c10::Layout>, std::optional<c10::Device>, std::optional<bool>, std::optional<c10::MemoryFormat>)", "??", 0),
        ]
        cpp_pyentry = [
            ("torch::autograd::THPVariable_linear(_object*, _object*, _object*)", "python_nn_functions.cpp", 0),
            ("cfunction_call", pyc + "Objects/methodobject.c", 543),
            ("_PyObject_MakeTpCall", pyc + "Objects/call.c", 214),
        ]
        evalf = ("_PyEval_EvalFrameDefault", pyc + "Python/ceval.c", 5276)
        cpp_tail = [
            ("PyEval_EvalCode", pyc + "Python/ceval.c", 1148),
            ("run_eval_code_obj", pyc + "Python/pythonrun.c", 1741),
            ("run_mod", pyc + "Python/pythonrun.c", 1762),
            ("pyrun_file", pyc + "Python/pythonrun.c", 1657),
            ("_PyRun_SimpleFileObject", pyc + "Python/pythonrun.c", 440),
            ("_PyRun_AnyFileObject", pyc + "Python/pythonrun.c", 79),
            ("pymain_run_file_obj", pyc + "Modules/main.c", 360),
            ("Py_BytesMain", pyc + "Modules/main.c", 734),
            ("__libc_start_call_main", "??", 0),
            ("__libc_start_main_alias_2", "", 0),
            ("_start", "??", 0),
        ]
        cpp_engine = [
            ("at::native::mm_out_cuda(at::Tensor const&, at::Tensor const&, at::Tensor&)", "Blas.cpp", 0),
            ("torch::autograd::generated::MmBackward0::apply(std::vector<at::Tensor, std::allocator<at::Tensor> >&&)", "Functions.cpp", 0),
            ("torch::autograd::Node::operator()(std::vector<at::Tensor, std::allocator<at::Tensor> >&&)", "function.h", 0),
            ("torch::autograd::Engine::evaluate_function(std::shared_ptr<torch::autograd::GraphTask>&, torch::autograd::Node*, torch::autograd::InputBuffer&, std::shared_ptr<torch::autograd::ReadyQueue> const&)", "engine.cpp", 0),
            ("torch::autograd::Engine::thread_main(std::shared_ptr<torch::autograd::GraphTask> const&)", "engine.cpp", 0),
            ("torch::autograd::Engine::thread_init(int, std::shared_ptr<torch::autograd::ReadyQueue> const&, bool)", "engine.cpp", 0),
            ("torch::autograd::python::PythonEngine::thread_init(int, std::shared_ptr<torch::autograd::ReadyQueue> const&, bool)", "python_engine.cpp", 0),
            ("std::execute_native_thread_routine", "??", 0),
            ("start_thread", "??", 0),
            ("clone", "??", 0),
        ]
        for name, frames in py.items():
            if self.cpp:
                out = list(cpp_alloc) + cpp_pyentry
                for f in frames:
                    out.append(f)
                    if not f[1].startswith("<frozen"):
                        out.append(evalf)
                out += cpp_tail
                frames = out
            self.by_site[name] = self.stack(frames)
        for name in engine:
            if self.cpp:
                self.by_site[name] = self.stack(list(cpp_alloc) + cpp_engine)
            else:
                self.by_site[name] = self.stack([])
        self.by_site["none"] = self.stack([])


# ---------------------------------------------------------------------------
# Site of a stack (spec: "Allocation site")

HIDE_NAME = ("unwind::unwind", "CapturedTraceback::gather", "gather_with_cpp", "_start",
             "__libc_start_main", "PyEval_", "PyObject_", "PyFunction_")
HIDE_FILE = ("core/boxing", "/Register", "/Redispatch", "pythonrun.c", "Modules/main.c",
             "Objects/call.c", "Objects/methodobject.c", "pycore_ceval.h", "ceval.c",
             "cpython/abstract.h")


def _hidden(f):
    name, fn, _ = f
    return any(h in name for h in HIDE_NAME) or any(h in fn for h in HIDE_FILE)


def _internal(fn):
    return (fn in ("", "??") or fn.endswith((".cpp", ".h", ".c", ".cc", ".cu")) or
            "/torch/" in fn or "\\torch\\" in fn or fn.startswith("torch/") or "<frozen " in fn)


def norm_line(line):
    return 0 if line == U64_MAX else line


def site_of(frames):
    """frames: tuple of (name, filename, line) innermost first (lines normalised).
    Returns (site, kept)."""
    kept = [f for f in frames if not _hidden(f)]
    if not kept:
        return "<no stack recorded>", kept
    pick = None
    for f in kept:
        if not _internal(f[1]):
            pick = f
            break
    if pick is None:
        pick = kept[0]
    name, fn, line = pick
    site = "%s (%s:%d)" % (name, fn, line) if line != 0 else "%s (%s)" % (name, fn)
    return site, kept


def frames_json(kept):
    return [{"name": n, "filename": f, "line": l} for n, f, l in kept]


# ---------------------------------------------------------------------------
# Allocator simulator

class Blk:
    __slots__ = ("addr", "size", "req", "state", "seg", "prev", "next", "lst", "uses", "rec")

    def __init__(self, addr, size, seg):
        self.addr = addr
        self.size = size
        self.req = 0
        self.state = INACTIVE
        self.seg = seg
        self.prev = None
        self.next = None
        self.lst = -1
        self.uses = None
        self.rec = -1


class Seg:
    __slots__ = ("dev", "addr", "size", "stream", "small", "pool", "exp", "head", "lst", "key")

    def __init__(self, dev, addr, size, stream, small, pool, exp, lst):
        self.dev = dev
        self.addr = addr
        self.size = size
        self.stream = stream
        self.small = small
        self.pool = pool
        self.exp = exp
        self.lst = lst
        self.key = (pool, stream, small)
        self.head = None

    def blocks(self):
        b = self.head
        while b is not None:
            yield b
            b = b.next


class Trace:
    """One device's trace ring, as parallel arrays."""

    def __init__(self, max_entries):
        self.max = max_entries
        self.act = array.array("B")
        self.addr = array.array("Q")
        self.size = array.array("Q")
        self.stream = array.array("Q")
        self.t = array.array("q")
        self.lst = array.array("q")
        self.inuse = array.array("Q")  # simulator truth: Σ requested of live allocations after the event
        self.cost = array.array("I")  # estimated encoded bytes
        self.base = 0  # global index of element 0
        self.est = 0

    def __len__(self):
        return len(self.act)

    def trim(self):
        n = len(self.act)
        if n <= self.max:
            return
        drop = n - self.max
        self.est -= sum(self.cost[:drop])
        for a in (self.act, self.addr, self.size, self.stream, self.t, self.lst, self.inuse, self.cost):
            del a[:drop]
        self.base += drop


class VA:
    """A device's virtual address space for cudaMalloc: first fit, 2 MiB aligned."""

    def __init__(self, base, size):
        self.free = [(base, size)]  # sorted by address

    def alloc(self, size):
        for i, (a, s) in enumerate(self.free):
            if s >= size:
                if s == size:
                    del self.free[i]
                else:
                    self.free[i] = (a + size, s - size)
                return a
        raise RuntimeError("address space exhausted")

    def release(self, addr, size):
        i = bisect.bisect_left(self.free, (addr, 0))
        self.free.insert(i, (addr, size))
        # merge neighbours
        if i + 1 < len(self.free) and self.free[i][0] + self.free[i][1] == self.free[i + 1][0]:
            self.free[i] = (self.free[i][0], self.free[i][1] + self.free[i + 1][1])
            del self.free[i + 1]
        if i > 0 and self.free[i - 1][0] + self.free[i - 1][1] == self.free[i][0]:
            self.free[i - 1] = (self.free[i - 1][0], self.free[i - 1][1] + self.free[i][1])
            del self.free[i]


class Device:
    def __init__(self, idx, capacity, outside, max_entries):
        self.idx = idx
        self.capacity = capacity
        self.outside = outside
        self.reserved = 0
        self.segs = {}  # addr -> Seg
        self.blocks = {}  # addr -> Blk (every block of every segment)
        self.free = {}  # (pool, stream, small) -> sorted list of (size, addr)
        self.exp = {}  # (pool, stream, small) -> Seg (expandable)
        self.exp_base = {}  # key -> VA base of the expandable reservation
        self.va = VA(0x7F3A00000000 + idx * 0x4000000000, 0x3000000000)
        self.trace = Trace(max_entries)
        self.pending = []  # [ready_op, Blk]
        self.inuse = 0
        self.ooms = []  # OOM records (dict)


class OOMError(Exception):
    pass


class Sim:
    def __init__(self, args, rng, stacks):
        self.args = args
        self.rng = rng
        self.stacks = stacks
        self.expandable = args.expandable
        self.context = args.context
        self.devs = [Device(d, args.capacity, args.outside if d == 0 else 0, args.max_entries)
                     for d in range(args.devices)]
        self.now = 1771267191145495 + args.seed * 7919
        self.lists = array.array("I")  # list id -> stack id
        self.ops = 0
        # allocation records (truth for the peak)
        self.rec_dev = array.array("B")
        self.rec_alloc = array.array("q")
        self.rec_free = array.array("q")
        self.rec_size = array.array("Q")
        self.rec_lst = array.array("q")
        self.annotations = []  # (stage, name, device, time_us)
        self.est_layout = EventCost(args.layout, stacks)
        self.est_factor = 1.0
        self.calibrated = 0

    # -- lists and events
    def new_list(self, site):
        self.lists.append(self.stacks.by_site[site])
        return len(self.lists) - 1

    def tick(self, lo=1, hi=40):
        self.now += self.rng.randint(lo, hi)
        return self.now

    def emit(self, D, act, addr, size, stream, lst):
        tr = D.trace
        tr.act.append(act)
        tr.addr.append(addr)
        tr.size.append(size)
        tr.stream.append(stream)
        tr.t.append(self.tick())
        tr.lst.append(lst)
        tr.inuse.append(D.inuse)
        c = self.est_layout.cost(act, lst, self.lists)
        tr.cost.append(c)
        tr.est += c
        if len(tr.act) > tr.max + max(tr.max, 65536):
            tr.trim()
        return tr.base + len(tr.act) - 1

    # -- free lists
    def _fl_add(self, D, b):
        fl = D.free.setdefault(b.seg.key, [])
        bisect.insort(fl, (b.size, b.addr))

    def _fl_del(self, D, b):
        fl = D.free[b.seg.key]
        i = bisect.bisect_left(fl, (b.size, b.addr))
        assert fl[i] == (b.size, b.addr)
        del fl[i]

    def _best_fit(self, D, key, size):
        fl = D.free.get(key)
        if not fl:
            return None
        i = bisect.bisect_left(fl, (size, 0))
        if i == len(fl):
            return None
        return D.blocks[fl[i][1]]

    # -- segments
    def _new_segment(self, D, key, size, lst):
        pool, stream, small = key
        if self.expandable and pool == DEFAULT_POOL:
            return self._grow_expandable(D, key, size, lst)
        seg_size = segment_size_for(size)
        if D.reserved + D.outside + seg_size > D.capacity:
            return False
        addr = D.va.alloc(seg_size)
        seg = Seg(D.idx, addr, seg_size, stream, small, pool, False, lst)
        b = Blk(addr, seg_size, seg)
        seg.head = b
        D.segs[addr] = seg
        D.blocks[addr] = b
        D.reserved += seg_size
        self._fl_add(D, b)
        self.emit(D, A_SEG_ALLOC, addr, seg_size, stream, lst)
        return True

    def _grow_expandable(self, D, key, size, lst):
        pool, stream, small = key
        gran = SMALL_BUFFER if small else LARGE_BUFFER
        seg = D.exp.get(key)
        tail = None
        if seg is not None:
            tail = seg.head
            while tail.next is not None:
                tail = tail.next
            if tail.state != INACTIVE:
                tail = None
        need = size - (tail.size if tail is not None else 0)
        nmap = (need + gran - 1) // gran * gran
        if D.reserved + D.outside + nmap > D.capacity:
            return False
        if seg is None:
            base = D.exp_base.get(key)
            if base is None:
                base = 0x7FA000000000 + D.idx * 0x10000000000 + len(D.exp_base) * 0x1000000000
                D.exp_base[key] = base
            seg = Seg(D.idx, base, 0, stream, small, pool, True, lst)
            D.exp[key] = seg
            D.segs[base] = seg
        start = seg.addr + seg.size
        seg.size += nmap
        D.reserved += nmap
        if tail is not None:
            self._fl_del(D, tail)
            tail.size += nmap
            self._fl_add(D, tail)
        else:
            b = Blk(start, nmap, seg)
            D.blocks[start] = b
            if seg.head is None:
                seg.head = b
            else:
                last = seg.head
                while last.next is not None:
                    last = last.next
                last.next = b
                b.prev = last
            self._fl_add(D, b)
        self.emit(D, A_SEG_MAP, start, nmap, stream, lst)
        return True

    def _release_cached(self, D):
        """Synchronise (complete every pending free), then free every wholly free
        segment and unmap the free tails of expandable segments."""
        self._process_events(D, force=True)
        for addr in sorted(D.segs):
            seg = D.segs[addr]
            b = seg.head
            if seg.exp:
                last = b
                while last.next is not None:
                    last = last.next
                if last.state != INACTIVE:
                    continue
                # unmap the whole granules of the free tail
                gran = SMALL_BUFFER if seg.small else LARGE_BUFFER
                off = last.addr - seg.addr
                keep = (off + gran - 1) // gran * gran
                cut = seg.size - keep
                if cut <= 0:
                    continue
                start = seg.addr + keep
                self._fl_del(D, last)
                if keep == off:
                    del D.blocks[last.addr]
                    if last.prev is None:
                        seg.head = None
                    else:
                        last.prev.next = None
                else:
                    last.size -= cut
                    self._fl_add(D, last)
                seg.size -= cut
                D.reserved -= cut
                self.emit(D, A_SEG_UNMAP, start, cut, seg.stream, -1)
                if seg.size == 0:
                    del D.segs[seg.addr]
                    del D.exp[seg.key]
                continue
            if b.next is None and b.state == INACTIVE:
                self._fl_del(D, b)
                del D.blocks[b.addr]
                del D.segs[addr]
                D.reserved -= seg.size
                D.va.release(seg.addr, seg.size)
                self.emit(D, A_SEG_FREE, seg.addr, seg.size, seg.stream, -1)

    def empty_cache(self, dev):
        self._release_cached(self.devs[dev])

    # -- malloc / free
    def malloc(self, dev, req, stream, site, pool=DEFAULT_POOL):
        D = self.devs[dev]
        self.ops += 1
        self._process_events(D)
        size = round512(req)
        small = size <= SMALL_SIZE
        key = (pool, stream, small)
        lst = self.new_list(site)
        b = self._best_fit(D, key, size)
        if b is None:
            ok = self._new_segment(D, key, size, lst)
            if not ok:
                self._release_cached(D)
                ok = self._new_segment(D, key, size, lst)
            if not ok:
                self._oom(D, size, stream, lst, key)
                raise OOMError(size)
            b = self._best_fit(D, key, size)
            assert b is not None
        self._fl_del(D, b)
        remaining = b.size - size
        seg = b.seg
        if small or seg.exp:
            split = remaining >= MIN_BLOCK
        else:
            split = remaining > SMALL_SIZE
        if split:
            rest = Blk(b.addr + size, remaining, seg)
            rest.req = b.req  # the remainder keeps the old (stale) block's fields
            rest.lst = b.lst
            nb = Blk(b.addr, size, seg)
            nb.prev = b.prev
            nb.next = rest
            rest.prev = nb
            rest.next = b.next
            if b.next is not None:
                b.next.prev = rest
            if b.prev is not None:
                b.prev.next = nb
            else:
                seg.head = nb
            D.blocks[nb.addr] = nb
            D.blocks[rest.addr] = rest
            self._fl_add(D, rest)
            b = nb
        b.state = ALLOCATED
        b.req = req
        b.lst = lst
        b.uses = None
        D.inuse += req
        g = self.emit(D, A_ALLOC, b.addr, req, stream, lst)
        b.rec = len(self.rec_dev)
        self.rec_dev.append(dev)
        self.rec_alloc.append(g)
        self.rec_free.append(-1)
        self.rec_size.append(req)
        self.rec_lst.append(lst)
        return b

    def record_stream(self, b, stream):
        if b.uses is None:
            b.uses = set()
        b.uses.add(stream)

    def free(self, b, site="free_step"):
        D = self.devs[b.seg.dev]
        assert b.state == ALLOCATED
        self.ops += 1
        if self.context == "all":
            lst = self.new_list(site)
        else:
            lst = b.lst
        self.emit(D, A_FREE_REQ, b.addr, b.req, b.seg.stream, lst)
        if b.uses:
            b.state = PENDING
            D.pending.append([self.ops + self.rng.randint(3, 40), b])
        else:
            self._free_block(D, b, lst)

    def _process_events(self, D, force=False):
        if not D.pending:
            return
        keep = []
        for item in D.pending:
            if force or item[0] <= self.ops:
                b = item[1]
                self._free_block(D, b, b.lst)  # no context: the allocation's stack
            else:
                keep.append(item)
        D.pending = keep

    def _free_block(self, D, b, lst):
        D.inuse -= b.req
        g = self.emit(D, A_FREE_DONE, b.addr, b.req, b.seg.stream, lst)
        self.rec_free[b.rec] = g
        b.state = INACTIVE
        b.uses = None
        # merge with neighbours
        p = b.prev
        if p is not None and p.state == INACTIVE:
            self._fl_del(D, p)
            del D.blocks[b.addr]
            b.addr = p.addr
            b.size += p.size
            b.prev = p.prev
            if p.prev is not None:
                p.prev.next = b
            else:
                b.seg.head = b
            D.blocks[b.addr] = b
        n = b.next
        if n is not None and n.state == INACTIVE:
            self._fl_del(D, n)
            del D.blocks[n.addr]
            b.size += n.size
            b.next = n.next
            if n.next is not None:
                n.next.prev = b
        self._fl_add(D, b)

    def snapshot_marker(self, dev):
        D = self.devs[dev]
        active = sum(b.size for s in D.segs.values() for b in s.blocks() if b.state != INACTIVE)
        self.emit(D, A_SNAPSHOT, 0, active, 0, -1)

    def annotate(self, stage, name, dev=0):
        self.annotations.append((stage, name, dev, self.tick()))

    # -- OOM: record the figures from the simulator's own state
    def _oom(self, D, size, stream, lst, key):
        device_free = D.capacity - D.reserved - D.outside
        pool, _, small = key
        largest = 0
        cache_free = 0
        allocated = 0
        pending = 0
        for seg in D.segs.values():
            for b in seg.blocks():
                if b.state == INACTIVE:
                    if seg.pool == DEFAULT_POOL and seg.stream == stream and seg.small == small:
                        cache_free += b.size
                        largest = max(largest, b.size)
                elif b.state == ALLOCATED:
                    allocated += b.size
                else:
                    pending += b.size
        g = self.emit(D, A_OOM, device_free, size, stream, lst)
        D.ooms.append({
            "global_event": g,
            "device": D.idx,
            "requested_bytes": size,
            "device_free_bytes": device_free,
            "largest_free_block_bytes": largest,
            "cache_free_bytes": cache_free,
            "reserved_bytes": D.reserved,
            "allocated_bytes": allocated,
            "pending_bytes": pending,
            "pool": "small" if small else "large",
            "stream": stream,
            "outside_truth": D.outside,
            "capacity_truth": D.capacity,
            "lst": lst,
        })


class EventCost:
    """Rough encoded size of one event, for --target-bytes."""

    def __init__(self, layout, stacks):
        base = {"2.0": 30, "2.1": 30, "2.2": 39, "2.3": 39, "2.5": 39, "2.8": 46, "2.10": 49, "list": 0}
        self.base = base[layout]
        self.stacks = stacks
        self.seen = 0

    def cost(self, act, lst, lists):
        if self.base == 0:
            return 0
        c = self.base
        if lst >= 0:
            if lst >= self.seen:
                self.seen = lst + 1
                c += 4 + 5 * len(self.stacks.stacks[lists[lst]])
            else:
                c += 5
        return c


# ---------------------------------------------------------------------------
# Workloads

class Model:
    PRESETS = {
        "tiny": dict(H=256, L=2, S=256, B=4, V=8192, NH=4),
        "small": dict(H=512, L=4, S=512, B=8, V=32000, NH=8),
        "medium": dict(H=1024, L=8, S=1024, B=8, V=32000, NH=16),
        "large": dict(H=2048, L=16, S=2048, B=8, V=50304, NH=16),
    }

    def __init__(self, sim, dev, preset, rng, args):
        self.sim = sim
        self.dev = dev
        self.rng = rng
        self.args = args
        for k, v in self.PRESETS[preset].items():
            setattr(self, k, v)
        self.params = []
        self.opt = []
        self.grads = []
        self.leaked = []
        self.hooked = []
        self.step_no = 0
        self.side = args.side_stream_handle if args.side_stream else 0
        self.pending_batch = None

    def a(self, site, n, stream=0, pool=DEFAULT_POOL):
        return self.sim.malloc(self.dev, n, stream, site, pool)

    def f(self, b, site="free_step"):
        self.sim.free(b, site)

    def setup(self):
        H, V, L = self.H, self.V, self.L
        self.params.append(self.a("params", V * H * 2))  # embedding
        for _ in range(L):
            self.params.append(self.a("params", H * 2))  # norm weight (small pool)
            self.params.append(self.a("params", 3 * H * H * 2))
            self.params.append(self.a("params", H * H * 2))
            self.params.append(self.a("params", H * 2))
            self.params.append(self.a("params", 4 * H * H * 2))
            self.params.append(self.a("params", 4 * H * H * 2))
        self.params.append(self.a("params", V * H * 2))  # lm head

    def seq(self):
        lo = max(64, self.S // 2)
        return self.rng.randrange(lo, self.S + 1) if self.args.vary else self.S

    def step(self, leak=False):
        H, V, L, B, NH = self.H, self.V, self.L, self.B, self.NH
        S = self.seq()
        sim = self.sim
        self.step_no += 1
        if self.grads:
            sim.annotate("START", "Optimizer.zero_grad#AdamW.zero_grad", self.dev)
            for g in self.grads:
                self.f(g, "free_opt")
            self.grads = []
            sim.annotate("END", "Optimizer.zero_grad#AdamW.zero_grad", self.dev)
        # input batch (prefetched on the side stream when enabled)
        if self.side:
            tok = self.a("prefetch", B * S * 8, stream=self.side)
            sim.record_stream(tok, 0)
            stage = self.a("prefetch", 12 * MiB + 4096 * self.rng.randint(0, 64), stream=self.side)
            sim.record_stream(stage, 0)
            self.f(stage, "free_step")
        else:
            tok = self.a("tokens", B * S * 8)
        x = self.a("embed", B * S * H * 2)
        saved = []
        for _ in range(L):
            n1 = self.a("norm", B * S * 4)
            qkv = self.a("qkv", 3 * B * S * H * 2)
            att = self.a("attn", B * S * H * 2)
            lse = self.a("attn", B * NH * S * 4)
            pr = self.a("attn_proj", B * S * H * 2)
            if leak:
                self.leaked.append(self.a("kv_cache", 2 * B * S * H * 2 // 8))
            x2 = self.a("resid", B * S * H * 2)
            self.f(pr, "free_fwd")
            n2 = self.a("norm", B * S * 4)
            up = self.a("mlp_up", B * S * 4 * H * 2)
            act = self.a("mlp_act", B * S * 4 * H * 2)
            dn = self.a("mlp_down", B * S * H * 2)
            x3 = self.a("resid", B * S * H * 2)
            self.f(dn, "free_fwd")
            if self.args.hook and self.rng.random() < 0.5:
                # a forward hook that keeps a small summary of each output
                self.hooked.append(self.a("hook", B * 4 * 4 + self.rng.randrange(0, 64, 4)))
            saved += [x, n1, qkv, att, lse, x2, n2, up, act]
            x = x3
        logits = self.a("logits", B * S * V * 2)
        loss = self.a("loss", 4)
        if leak:
            self.leaked.append(self.a("loss", 4))
        # backward
        dlog = self.a("backward", B * S * V * 2)
        self.f(logits, "free_bwd")
        dx = self.a("backward", B * S * H * 2)
        self.f(dlog, "free_bwd")
        first = not self.opt
        pi = len(self.params) - 1
        self.grads.append(self.a("grad", self.params[pi].size))
        pi -= 1
        self.f(x, "free_bwd")
        while saved:
            chunk = saved[-9:]
            del saved[-9:]
            for _ in range(6):
                if pi >= 1:
                    self.grads.append(self.a("grad", self.params[pi].req))
                    pi -= 1
            t1 = self.a("backward", B * S * 4 * H * 2)
            t2 = self.a("backward", B * S * H * 2)
            for b in reversed(chunk):
                self.f(b, "free_bwd")
            self.f(t1, "free_bwd")
            self.f(dx, "free_bwd")
            dx = t2
        self.grads.append(self.a("grad", self.params[0].req))
        self.f(dx, "free_bwd")
        self.f(loss, "free_step")
        self.f(tok, "free_step")  # on the side stream: pending until its events complete
        # optimizer
        sim.annotate("START", "Optimizer.step#AdamW.step", self.dev)
        if first:
            for p in self.params:
                self.opt.append(self.a("opt_state", p.req * 2))  # exp_avg (fp32 of bf16 param)
                self.opt.append(self.a("opt_state", p.req * 2))  # exp_avg_sq
        tmps = []
        for p in self.params[:: max(1, len(self.params) // 6)]:
            tmps.append(self.a("opt_tmp", p.req * 2))
        for t in tmps:
            self.f(t, "free_opt")
        sim.annotate("END", "Optimizer.step#AdamW.step", self.dev)


def scenario_steady(sim, models, args, dumps):
    for m in models:
        m.setup()
    n = 0
    while True:
        for m in models:
            m.step(leak=False)
            if args.empty_cache_every and m.step_no % args.empty_cache_every == 0:
                sim.empty_cache(m.dev)
        n += 1
        if args.target_bytes:
            est = estimate_size(sim, args)
            if n == 3 or (sim.calibrated < 2 and est >= args.target_bytes // 50):
                calibrate(sim, args)
                est = estimate_size(sim, args)
            if est >= args.target_bytes * 1.01:
                break
            if n % 50 == 0 and not args.quiet:
                print("  step %d, ~%.0f MB" % (n, estimate_size(sim, args) / 1e6), file=sys.stderr)
        elif n >= args.steps:
            break
    if args.pending_free:
        leave_pending(sim, models)
    dumps.append(("", None))


def leave_pending(sim, models):
    """End with a few frees still waiting on another stream's events."""
    for m in models:
        stream = m.side or 0
        for i in range(2):
            b = sim.malloc(m.dev, 256 * KiB + i * 4096, stream, "prefetch")
            sim.record_stream(b, 0 if stream else 0x5581D3A4E650)
            sim.free(b, "free_step")
        # keep them pending at dump time
        for item in sim.devs[m.dev].pending:
            item[0] = 1 << 62


def scenario_graph(sim, models, args):
    """A CUDA-graph capture into a private pool: its blocks stay reserved."""
    pool = (1, 0)
    for m in models:
        H, B, S = m.H, m.B, m.S
        keep = [sim.malloc(m.dev, B * S * H * 2, 0, "graph", pool) for _ in range(3)]
        tmp = [sim.malloc(m.dev, B * S * 4 * H * 2 + 8192, 0, "graph", pool) for _ in range(2)]
        small = [sim.malloc(m.dev, 4096 * (i + 1), 0, "graph", pool) for i in range(3)]
        sim.free(tmp[0], "free_fwd")
        sim.free(small[1], "free_fwd")
        m.graph_blocks = keep + tmp[1:] + small[::2]


def scenario_fragmentation(sim, models, args, dumps):
    m = models[0]
    dev = m.dev
    D = sim.devs[dev]
    rng = sim.rng
    m.setup()
    m.step()
    # a long generation loop: variable-sized KV-cache blocks of 2-9 MiB packed in
    # 20 MiB segments, filling the device
    live = []
    while D.capacity - D.outside - D.reserved >= LARGE_BUFFER + 2 * MiB:
        n = rng.randrange(2 * MiB, 9 * MiB, 512) - rng.randrange(0, 512)
        live.append(sim.malloc(dev, n, 0, "kv_cache"))
    # requests finish at random: free most of them, but keep at least one live
    # block in most segments so that the cache flush cannot return them
    by_seg = {}
    for b in live:
        by_seg.setdefault(b.seg.addr, []).append(b)
    freed_whole = 0
    for addr, bl in sorted(by_seg.items()):
        rng.shuffle(bl)
        if freed_whole < 1 and len(bl) >= 2 and rng.random() < 0.3:
            # one wholly free segment: the flush before the OOM returns it
            for b in bl:
                sim.free(b, "free_step")
            freed_whole += 1
            continue
        for b in bl[: max(1, (len(bl) * 3) // 5)]:
            sim.free(b, "free_step")
    # the request that fails: larger than any hole (holes are < 20 MiB) and
    # larger than what a cache flush could give back
    flushable = sum(s.size for s in D.segs.values() if all(b.state == INACTIVE for b in s.blocks()))
    room = D.capacity - D.outside - D.reserved + flushable
    want = max(48 * MiB, room + 2 * MiB) - 1000
    try:
        sim.malloc(dev, want, 0, "logits")
        raise SystemExit("fragmentation scenario: the request did not fail")
    except OOMError:
        pass
    if args.after_oom:
        # the program catches the OOM and carries on with smaller pieces:
        # frees three blocks, then allocates into the holes
        kv = sim.stacks.by_site["kv_cache"]
        live = [b for s in D.segs.values() for b in s.blocks() if b.state == ALLOCATED
                and s.pool == DEFAULT_POOL and not s.small and b.size == round512(b.req)
                and sim.lists[b.lst] == kv]
        live.sort(key=lambda b: b.addr)
        for b in live[:3]:
            sim.free(b, "free_step")
        holes = [b.size for s in D.segs.values() if s.pool == DEFAULT_POOL and not s.small and s.stream == 0
                 for b in s.blocks() if b.state == INACTIVE]
        sim.malloc(dev, min(6 * MiB, max(holes)) - 512, 0, "logits")
        small_holes = [b.size for s in D.segs.values() if s.small and s.stream == 0 and s.pool == DEFAULT_POOL
                       for b in s.blocks() if b.state == INACTIVE]
        if (small_holes and max(small_holes) >= 4096) or D.capacity - D.outside - D.reserved >= SMALL_BUFFER:
            tmp = sim.malloc(dev, 4096, 0, "loss")
            sim.free(tmp, "free_step")
            sim.malloc(dev, 1536, 0, "loss")  # stays live
    dumps.append(("", None))


def scenario_live_tensors(sim, models, args, dumps):
    m = models[0]
    dev = m.dev
    m.setup()
    m.step()
    m.step()
    # the sequence length is raised: activations of every layer stay alive until
    # the backward pass, and they no longer fit. Activation sizes are whole
    # multiples of 2 MiB, so each fills its own segment exactly.
    H, B = m.H, m.B
    chunk = max(64 * MiB, B * m.S * H * 2 * 64)
    acts = []
    try:
        while True:
            acts.append(sim.malloc(dev, chunk, 0, "mlp_up"))
            tmp = sim.malloc(dev, B * m.S * H * 2 * 4, 0, "attn_proj")
            acts.append(sim.malloc(dev, B * m.S * H * 2 * 4, 0, "resid"))
            sim.free(tmp, "free_fwd")
    except OOMError:
        pass
    dumps.append(("", None))


def scenario_outside(sim, models, args, dumps):
    m = models[0]
    dev = m.dev
    D = sim.devs[dev]
    m.setup()
    for _ in range(args.steps):
        m.step()
    # evaluation with a larger batch: one big logits tensor that cannot fit
    # because other processes hold part of the GPU
    live = sum(s.size for s in D.segs.values() if any(b.state != INACTIVE for b in s.blocks()))
    room = D.capacity - D.outside - live
    want = room + 256 * MiB + 12345
    if want > D.outside:
        raise SystemExit("outside scenario: --outside too small for this model (need >= %d)" % want)
    try:
        sim.malloc(dev, want, 0, "big_eval")
        raise SystemExit("outside scenario: the request did not fail")
    except OOMError:
        pass
    dumps.append(("", None))


def scenario_leak(sim, models, args, dumps):
    for m in models:
        m.setup()
    for i in range(args.steps):
        for m in models:
            m.step(leak=i >= 1)
    dumps.append(("before", None))
    for i in range(args.steps):
        for m in models:
            m.step(leak=True)
    dumps.append(("after", None))


SCENARIOS = {
    "steady": scenario_steady,
    "fragmentation": scenario_fragmentation,
    "live_tensors": scenario_live_tensors,
    "outside": scenario_outside,
    "leak": scenario_leak,
}


def estimate_size(sim, args):
    ev = sum(D.trace.est for D in sim.devs)
    nb = sum(len(D.blocks) for D in sim.devs)
    return int((ev + nb * 60 + 200 * sum(len(D.segs) for D in sim.devs)) * sim.est_factor)


def calibrate(sim, args):
    """Encode the current state to a byte counter and correct the size estimate."""
    sim.est_factor = 1.0
    raw = estimate_size(sim, args)
    d = Dump(sim, args, marker=False)
    sink = CountingWriter(None)
    pw = PickleWriter(sink, args.protocol)
    LayoutWriter(d, pw).write()
    sim.est_factor = sink.n / max(1, raw)
    sim.calibrated += 1


# ---------------------------------------------------------------------------
# Dump: the state to write, taken from the simulator at one moment

class Dump:
    def __init__(self, sim, args, marker=True):
        self.layout = args.layout
        self.args = args
        st = sim.stacks
        self.frames = st.frames
        self.stacks = st.stacks
        self.lists = sim.lists  # list id -> stack id (append-only; safe to share)
        if marker and args.layout in ("2.0", "2.1", "2.2"):
            sim.snapshot_marker(0)
        # segments, sorted by device then address
        self.segments = []
        for D in sim.devs:
            for addr in sorted(D.segs):
                s = D.segs[addr]
                if s.size == 0:
                    continue
                blocks = [(b.addr, b.size, b.req, b.state, b.lst) for b in s.blocks()]
                self.segments.append((D.idx, s.addr, s.size, s.stream, s.small, s.pool, s.exp, s.lst, blocks))
        # trace windows
        self.traces = []
        self.window_base = []
        for D in sim.devs:
            tr = D.trace
            n = len(tr)
            k = max(0, n - tr.max)
            self.window_base.append(tr.base + k)
            self.traces.append(dict(act=tr.act[k:], addr=tr.addr[k:], size=tr.size[k:], stream=tr.stream[k:],
                                    t=tr.t[k:], lst=tr.lst[k:], inuse=tr.inuse[k:]))
        t0 = min((tr["t"][0] for tr in self.traces if len(tr["t"])), default=0)
        self.annotations = [a for a in sim.annotations if a[3] >= t0]
        self.expandable = sim.expandable
        self.conf = "expandable_segments:True" if sim.expandable else ""


# ---------------------------------------------------------------------------
# Pickle writer (streaming). Mirrors CPython's C pickler byte for byte:
# memo on every str/dict/list/tuple, batches of 1000, framing (protocol >= 4)
# with a frame boundary check at the start of every save().

_FRAME_TARGET = 64 * 1024
_INT1 = [b"K" + bytes((i,)) for i in range(256)]


def enc_int(v):
    if 0 <= v < 256:
        return _INT1[v]
    if 0 <= v < 65536:
        return b"M" + struct.pack("<H", v)
    if -0x80000000 <= v <= 0x7FFFFFFF:
        return b"J" + struct.pack("<i", v)
    n = (v.bit_length() >> 3) + 1
    d = v.to_bytes(n, "little", signed=True)
    if v < 0 and n > 1 and d[-1] == 0xFF and (d[-2] & 0x80):
        d = d[:-1]
    if len(d) < 256:
        return b"\x8a" + bytes((len(d),)) + d
    return b"\x8b" + struct.pack("<i", len(d)) + d


class PickleWriter:
    def __init__(self, out, proto):
        self.out = out
        self.proto = proto
        self.framing = proto >= 4
        self.b = bytearray()
        self.n = 0  # memo size
        self.smemo = {}  # interned strings -> memo index
        self.written = 0
        if proto >= 2:
            self._raw(bytes((0x80, proto)))

    def _raw(self, data):
        self.out.write(data)
        self.written += len(data)

    def commit(self):
        b = self.b
        if self.framing and len(b) >= 4:
            self._raw(b"\x95" + struct.pack("<Q", len(b)))
        self._raw(bytes(b))
        self.b = bytearray()

    def bnd(self):
        if len(self.b) >= _FRAME_TARGET:
            if self.framing:
                self.commit()
            elif len(self.b) >= 1 << 20:
                self.commit()

    def put(self):
        i = self.n
        self.n += 1
        if self.proto >= 4:
            self.b.append(0x94)
        elif i < 256:
            self.b += b"q" + bytes((i,))
        else:
            self.b += b"r" + struct.pack("<I", i)
        return i

    def get(self, i):
        if i < 256:
            self.b += b"h" + bytes((i,))
        else:
            self.b += b"j" + struct.pack("<I", i)

    def _str_bytes(self, s):
        e = s.encode("utf-8", "surrogatepass")
        if self.proto >= 4 and len(e) < 256:
            return b"\x8c" + bytes((len(e),)) + e
        if len(e) <= 0xFFFFFFFF:
            return b"X" + struct.pack("<I", len(e)) + e
        return b"\x8d" + struct.pack("<Q", len(e)) + e

    # each of these is one save()
    def int(self, v):
        self.bnd()
        self.b += enc_int(v)

    def float(self, v):
        self.bnd()
        self.b += b"G" + struct.pack(">d", v)

    def bool(self, v):
        self.bnd()
        self.b += b"\x88" if v else b"\x89"

    def istr(self, s):
        """An interned string: one memo entry per value."""
        self.bnd()
        i = self.smemo.get(s)
        if i is not None:
            self.get(i)
        else:
            self.b += self._str_bytes(s)
            self.smemo[s] = self.put()

    def fstr(self, s):
        """A fresh string object (a new memo entry each time), except "" which
        CPython shares."""
        if s == "":
            return self.istr(s)
        self.bnd()
        self.b += self._str_bytes(s)
        self.put()

    def tuple2(self, a, b):
        self.bnd()
        self.int(a)
        self.int(b)
        self.b += b"\x86"
        self.put()

    def dict_begin(self, n):
        self.bnd()
        self.b += b"}"
        self.put()
        if n > 1:
            self.b += b"("

    def dict_end(self, n):
        if n == 1:
            self.b += b"s"
        elif n > 1:
            self.b += b"u"

    def list_of(self, n, item):
        """A new list of n items; item(i) saves the i-th item."""
        self.bnd()
        self.b += b"]"
        idx = self.put()
        if n == 1:
            item(0)
            self.b += b"a"
        elif n > 1:
            i = 0
            while i < n:
                self.b += b"("
                end = min(n, i + 1000)
                while i < end:
                    item(i)
                    i += 1
                self.b += b"e"
        return idx

    def finish(self):
        self.b += b"."
        self.commit()


class LayoutWriter:
    """Writes a Dump in one PyTorch layout through a PickleWriter."""

    def __init__(self, dump, pw):
        self.d = dump
        self.pw = pw
        L = dump.layout
        self.L = L
        self.history = L == "2.0"
        self.time = L not in ("2.0", "2.1", "list")
        self.cc = L in ("2.8", "2.10")
        self.um = L == "2.10"
        self.fmemo = {}  # frame id -> memo index
        self.lmemo = {}  # list id -> memo index

    def frame(self, fid):
        pw = self.pw
        i = self.fmemo.get(fid)
        if i is not None:
            pw.bnd()
            pw.get(i)
            return
        name, fn, line = self.d.frames[fid]
        pw.dict_begin(3)
        self.fmemo[fid] = pw.n - 1
        if self.history:
            pw.istr("filename"); pw.fstr(fn)
            pw.istr("name"); pw.fstr(name)
        else:
            pw.istr("name"); pw.fstr(name)
            pw.istr("filename"); pw.fstr(fn)
        pw.istr("line"); pw.int(line)
        pw.dict_end(3)

    def flist(self, lid):
        pw = self.pw
        if lid < 0:
            pw.list_of(0, None)
            return
        i = self.lmemo.get(lid)
        if i is not None:
            pw.bnd()
            pw.get(i)
            return
        fids = self.d.stacks[self.d.lists[lid]]
        frame = self.frame
        self.lmemo[lid] = pw.list_of(len(fids), lambda k: frame(fids[k]))

    def block(self, blk):
        pw = self.pw
        addr, size, req, state, lid = blk
        if self.history:
            active = state != INACTIVE
            n = 4 if active else 3
            pw.dict_begin(n)
            pw.istr("size"); pw.int(size)
            pw.istr("requested_size"); pw.int(req if active else 0)
            pw.istr("state"); pw.istr(STATE_NAMES[state])
            if active:
                pw.istr("history")

                def h(_):
                    pw.dict_begin(3)
                    pw.istr("addr"); pw.int(addr)
                    pw.istr("real_size"); pw.int(req)
                    pw.istr("frames"); self.flist(lid)
                    pw.dict_end(3)
                pw.list_of(1, h)
            pw.dict_end(n)
            return
        pw.dict_begin(5)
        pw.istr("address"); pw.int(addr)
        pw.istr("size"); pw.int(size)
        pw.istr("requested_size"); pw.int(req)
        pw.istr("state"); pw.istr(STATE_NAMES[state])
        pw.istr("frames"); self.flist(lid if state != INACTIVE else -1)
        pw.dict_end(5)

    def segment(self, seg):
        pw = self.pw
        dev, addr, size, stream, small, pool, exp, lid, blocks = seg
        alloc = sum(b[1] for b in blocks if b[3] == ALLOCATED)
        active = sum(b[1] for b in blocks if b[3] != INACTIVE)
        req = sum(b[2] for b in blocks if b[3] != INACTIVE)
        n = 9 if self.history else 12
        pw.dict_begin(n)
        pw.istr("device"); pw.int(dev)
        pw.istr("address"); pw.int(addr)
        pw.istr("total_size"); pw.int(size)
        pw.istr("allocated_size"); pw.int(alloc)
        pw.istr("active_size"); pw.int(active)
        pw.istr("requested_size"); pw.int(req)
        pw.istr("stream"); pw.int(stream)
        pw.istr("segment_type"); pw.istr("small" if small else "large")
        if not self.history:
            pw.istr("segment_pool_id"); pw.tuple2(pool[0], pool[1])
            pw.istr("is_expandable"); pw.bool(exp)
            pw.istr("frames"); self.flist(lid)
        pw.istr("blocks")
        block = self.block
        pw.list_of(len(blocks), lambda k: block(blocks[k]))
        pw.dict_end(n)

    def trace(self, tr):
        pw = self.pw
        act, addr, size, stream, t, lst = tr["act"], tr["addr"], tr["size"], tr["stream"], tr["t"], tr["lst"]
        time_, cc, um = self.time, self.cc, self.um
        flist = self.flist
        istr, fstr, put_int = pw.istr, pw.fstr, pw.int

        def ev(i):
            a = act[i]
            lid = lst[i]
            n = 4 + time_ + cc + um + (lid >= 0)
            pw.dict_begin(n)
            istr("action"); istr(ACTION_NAMES[a])
            istr("device_free" if a == A_OOM else "addr"); put_int(addr[i])
            istr("size"); put_int(size[i])
            istr("stream"); put_int(stream[i])
            if time_:
                istr("time_us"); put_int(t[i])
            if cc:
                istr("compile_context"); fstr("N/A")
            if um:
                istr("user_metadata"); istr("")
            if lid >= 0:
                istr("frames"); flist(lid)
            pw.dict_end(n)
        pw.list_of(len(act), ev)

    def settings(self):
        pw = self.pw
        graph = self.L == "2.10"
        n = 9 if graph else 8
        pw.dict_begin(n)
        pw.istr("PYTORCH_CUDA_ALLOC_CONF"); pw.fstr(self.d.conf)
        pw.istr("max_split_size"); pw.int(-1)
        pw.istr("garbage_collection_threshold"); pw.float(0.0)
        pw.istr("expandable_segments"); pw.bool(self.d.expandable)
        pw.istr("pinned_num_register_threads"); pw.int(1)
        pw.istr("release_lock_on_cudamalloc"); pw.bool(False)
        pw.istr("pinned_use_cuda_host_register"); pw.bool(False)
        if graph:
            pw.istr("graph_capture_record_stream_reuse"); pw.bool(False)
        pw.istr("roundup_power2_divisions")
        pw.dict_begin(16)
        for k in range(16):
            pw.istr(str(1 << k)); pw.int(0)
        pw.dict_end(16)
        pw.dict_end(n)

    def annotations(self):
        pw = self.pw
        ann = self.d.annotations

        def a(i):
            stage, name, dev, t = ann[i]
            pw.dict_begin(4)
            pw.istr("stage"); pw.istr(stage)
            pw.istr("name"); pw.fstr(name)
            pw.istr("device"); pw.int(dev)
            pw.istr("time_us"); pw.int(t)
            pw.dict_end(4)
        pw.list_of(len(ann), a)

    def write(self):
        pw = self.pw
        d = self.d
        segs = d.segments
        if self.L == "list":
            pw.list_of(len(segs), lambda k: self.segment(segs[k]))
            pw.finish()
            return
        n = 2 + (self.L not in ("2.0", "2.1", "2.2")) + (self.L in ("2.5", "2.8", "2.10"))
        pw.dict_begin(n)
        pw.istr("segments")
        pw.list_of(len(segs), lambda k: self.segment(segs[k]))
        pw.istr("device_traces")
        pw.list_of(len(d.traces), lambda k: self.trace(d.traces[k]))
        if n >= 3:
            pw.istr("allocator_settings")
            self.settings()
        if n >= 4:
            pw.istr("external_annotations")
            self.annotations()
        pw.dict_end(n)
        pw.finish()


# ---------------------------------------------------------------------------
# The same snapshot as a tree of Python objects (for verification only)

def _fresh(s):
    if s == "":
        return ""
    return (s + "\x00")[:-1]


class TreeBuilder:
    def __init__(self, dump):
        self.d = dump
        L = dump.layout
        self.L = L
        self.history = L == "2.0"
        self.fcache = {}
        self.lcache = {}
        I = sys.intern
        self.I = I

    def frame(self, fid):
        f = self.fcache.get(fid)
        if f is None:
            name, fn, line = self.d.frames[fid]
            I = self.I
            if self.history:
                f = {I("filename"): _fresh(fn), I("name"): _fresh(name), I("line"): line}
            else:
                f = {I("name"): _fresh(name), I("filename"): _fresh(fn), I("line"): line}
            self.fcache[fid] = f
        return f

    def flist(self, lid):
        if lid < 0:
            return []
        l = self.lcache.get(lid)
        if l is None:
            l = [self.frame(fid) for fid in self.d.stacks[self.d.lists[lid]]]
            self.lcache[lid] = l
        return l

    def segment(self, seg):
        I = self.I
        dev, addr, size, stream, small, pool, exp, lid, blocks = seg
        out = {I("device"): dev, I("address"): addr, I("total_size"): size,
               I("allocated_size"): sum(b[1] for b in blocks if b[3] == ALLOCATED),
               I("active_size"): sum(b[1] for b in blocks if b[3] != INACTIVE),
               I("requested_size"): sum(b[2] for b in blocks if b[3] != INACTIVE),
               I("stream"): stream, I("segment_type"): I("small" if small else "large")}
        if not self.history:
            out[I("segment_pool_id")] = (pool[0], pool[1])
            out[I("is_expandable")] = exp
            out[I("frames")] = self.flist(lid)
        bl = []
        for addr_, bsize, req, state, blid in blocks:
            if self.history:
                b = {I("size"): bsize, I("requested_size"): req if state != INACTIVE else 0,
                     I("state"): I(STATE_NAMES[state])}
                if state != INACTIVE:
                    b[I("history")] = [{I("addr"): addr_, I("real_size"): req, I("frames"): self.flist(blid)}]
            else:
                b = {I("address"): addr_, I("size"): bsize, I("requested_size"): req,
                     I("state"): I(STATE_NAMES[state]),
                     I("frames"): self.flist(blid if state != INACTIVE else -1)}
            bl.append(b)
        out[I("blocks")] = bl
        return out

    def build(self):
        I = self.I
        d = self.d
        L = self.L
        segs = [self.segment(s) for s in d.segments]
        if L == "list":
            return segs
        time_ = L not in ("2.0", "2.1")
        cc = L in ("2.8", "2.10")
        um = L == "2.10"
        traces = []
        for tr in d.traces:
            evs = []
            for i in range(len(tr["act"])):
                a = tr["act"][i]
                e = {I("action"): I(ACTION_NAMES[a])}
                e[I("device_free" if a == A_OOM else "addr")] = tr["addr"][i]
                e[I("size")] = tr["size"][i]
                e[I("stream")] = tr["stream"][i]
                if time_:
                    e[I("time_us")] = tr["t"][i]
                if cc:
                    e[I("compile_context")] = _fresh("N/A")
                if um:
                    e[I("user_metadata")] = ""
                if tr["lst"][i] >= 0:
                    e[I("frames")] = self.flist(tr["lst"][i])
                evs.append(e)
            traces.append(evs)
        top = {I("segments"): segs, I("device_traces"): traces}
        if L not in ("2.0", "2.1", "2.2"):
            st = {I("PYTORCH_CUDA_ALLOC_CONF"): _fresh(d.conf), I("max_split_size"): -1,
                  I("garbage_collection_threshold"): 0.0, I("expandable_segments"): d.expandable,
                  I("pinned_num_register_threads"): 1, I("release_lock_on_cudamalloc"): False,
                  I("pinned_use_cuda_host_register"): False}
            if L == "2.10":
                st[I("graph_capture_record_stream_reuse")] = False
            st[I("roundup_power2_divisions")] = {I(str(1 << k)): 0 for k in range(16)}
            top[I("allocator_settings")] = st
        if L in ("2.5", "2.8", "2.10"):
            top[I("external_annotations")] = [
                {I("stage"): I(s), I("name"): _fresh(n), I("device"): dv, I("time_us"): t}
                for s, n, dv, t in d.annotations]
        return top


# ---------------------------------------------------------------------------
# Normalised form: what the figures are computed from

class Norm:
    """segments: list of (device, address, total, stream, small, pool, expandable, blocks)
    with blocks (addr, size, req, state, stack); traces: per device dict of columns
    act/addr/size/stream/t/stack; stacks: list of frame tuples (lines normalised);
    stack -1 = the event had no frames key."""

    def __init__(self):
        self.segments = []
        self.traces = []
        self.stacks = []
        self.sites = {}

    def site(self, sid):
        r = self.sites.get(sid)
        if r is None:
            r = site_of(self.stacks[sid] if sid >= 0 else ())
            self.sites[sid] = r
        return r


def norm_from_dump(d):
    n = Norm()
    smap = {}
    frames = d.frames

    def stack_of_list(lid):
        if lid < 0:
            return -1
        sid = d.lists[lid]
        r = smap.get(sid)
        if r is None:
            r = len(n.stacks)
            n.stacks.append(tuple((fr[0], fr[1], norm_line(fr[2])) for fr in (frames[f] for f in d.stacks[sid])))
            smap[sid] = r
        return r
    empty = None
    for dev, addr, size, stream, small, pool, exp, lid, blocks in d.segments:
        bl = []
        for a, s, r, st, blid in blocks:
            if st == INACTIVE:
                if empty is None:
                    empty = len(n.stacks)
                    n.stacks.append(())
                sk = empty
                if d.layout == "2.0":
                    r = 0
            else:
                sk = stack_of_list(blid)
            bl.append((a, s, r, st, sk))
        n.segments.append((dev, addr, size, stream, small, pool, exp if d.layout != "2.0" else False, bl))
    if d.layout != "list":
        for tr in d.traces:
            n.traces.append(dict(act=tr["act"], addr=tr["addr"], size=tr["size"], stream=tr["stream"],
                                 t=tr["t"] if d.layout not in ("2.0", "2.1") else [0] * len(tr["act"]),
                                 stack=[stack_of_list(l) for l in tr["lst"]]))
    return n


def norm_from_pickle(obj):
    n = Norm()
    smap = {}

    def stack(frames):
        if frames is None:
            return -1
        t = tuple((f["name"], f["filename"], norm_line(f["line"])) for f in frames)
        r = smap.get(t)
        if r is None:
            r = len(n.stacks)
            n.stacks.append(t)
            smap[t] = r
        return r
    segs = obj if isinstance(obj, list) else obj["segments"]
    for s in segs:
        addr = s["address"]
        bl = []
        for b in s["blocks"]:
            if "history" in b:
                fr = b["history"][0].get("frames", []) if b["history"] else []
            else:
                fr = b.get("frames", [])
            ba = b.get("address", addr)
            bl.append((ba, b["size"], b["requested_size"], STATE_CODE[b["state"]], stack(fr)))
            addr = ba + b["size"]
        pool = tuple(s.get("segment_pool_id", (0, 0)))
        n.segments.append((s["device"], s["address"], s["total_size"], s["stream"],
                           s["segment_type"] == "small", pool, bool(s.get("is_expandable", False)), bl))
    if isinstance(obj, dict):
        for tr in obj.get("device_traces", []):
            cols = dict(act=[], addr=[], size=[], stream=[], t=[], stack=[])
            for e in tr:
                a = ACTION_CODE[e["action"]]
                cols["act"].append(a)
                cols["addr"].append(e["device_free"] if a == A_OOM else e["addr"])
                cols["size"].append(e["size"])
                cols["stream"].append(e["stream"])
                cols["t"].append(e.get("time_us", 0))
                cols["stack"].append(stack(e.get("frames")))
            n.traces.append(cols)
    return n


# ---------------------------------------------------------------------------
# Figures, straight from the spec's definitions

def _lower_median(sizes):
    if not sizes:
        return 0
    s = sorted(sizes)
    return s[(len(s) - 1) // 2]


def figures(segs):
    """Figures over a list of normalised segments."""
    reserved = allocated = active = inactive = requested = releasable = stranded = 0
    largest = 0
    alloc_sizes = []
    free_sizes = []
    nblocks = 0
    full = mixed = free = 0
    bs = {ALLOCATED: [0, 0], PENDING: [0, 0], INACTIVE: [0, 0]}
    exp_n = exp_b = 0
    for dev, addr, total, stream, small, pool, exp, blocks in segs:
        reserved += total
        if exp:
            exp_n += 1
            exp_b += total
        nact = sum(1 for b in blocks if b[3] != INACTIVE)
        if nact == len(blocks) and blocks:
            full += 1
        elif nact == 0:
            free += 1
        else:
            mixed += 1
        for a, size, req, st, sk in blocks:
            nblocks += 1
            bs[st][0] += 1
            bs[st][1] += size
            if st == ALLOCATED:
                allocated += size
                alloc_sizes.append(size)
            if st != INACTIVE:
                active += size
                requested += req
            else:
                inactive += size
                free_sizes.append(size)
                largest = max(largest, size)
                if nact == 0:
                    releasable += size
                else:
                    stranded += size
    typical = _lower_median(alloc_sizes)
    return {
        "reserved_bytes": reserved,
        "allocated_bytes": allocated,
        "active_bytes": active,
        "inactive_bytes": inactive,
        "requested_bytes": requested,
        "rounding_bytes": max(0, active - requested),
        "releasable_bytes": releasable,
        "stranded_bytes": stranded,
        "largest_free_block_bytes": largest,
        "fragmentation": 0.0 if inactive == 0 else 1 - largest / inactive,
        "typical_request_bytes": typical,
        "small_free_blocks": sum(1 for s in free_sizes if s < typical),
        "segments": len(segs),
        "blocks": nblocks,
        "segment_states": {"full": full, "mixed": mixed, "free": free},
        "block_states": {
            "active_allocated": {"count": bs[ALLOCATED][0], "bytes": bs[ALLOCATED][1]},
            "active_pending_free": {"count": bs[PENDING][0], "bytes": bs[PENDING][1]},
            "inactive": {"count": bs[INACTIVE][0], "bytes": bs[INACTIVE][1]},
        },
        "expandable_segments": exp_n,
        "expandable_bytes": exp_b,
    }


def devices_figures(n):
    out = []
    for dev in sorted(set(s[0] for s in n.segments)):
        segs = [s for s in n.segments if s[0] == dev]
        d = {"device": dev}
        d.update(figures(segs))
        pools = {}
        for s in segs:
            pools.setdefault((s[5], s[4]), []).append(s)

        def order(k):
            pid, small = k
            return (pid != DEFAULT_POOL, pid, small)
        plist = []
        small_free_sum = 0
        for k in sorted(pools, key=order):
            pid, small = k
            kind = "small" if small else "large"
            name = kind if pid == DEFAULT_POOL else "private %d,%d %s" % (pid[0], pid[1], kind)
            p = {"pool": name, "kind": kind, "pool_id": [pid[0], pid[1]]}
            p.update(figures(pools[k]))
            small_free_sum += p["small_free_blocks"]
            plist.append(p)
        d["small_free_blocks"] = small_free_sum
        d["pools"] = plist
        out.append(d)
    return out


def group_sites(items, n, top, with_frames):
    """items: iterable of (size, stack id) in order. Returns the top sites."""
    g = {}
    for size, sk in items:
        site, kept = n.site(sk)
        e = g.get(site)
        if e is None:
            g[site] = [size, 1, size, kept]
        else:
            e[0] += size
            e[1] += 1
            if size > e[2]:
                e[2] = size
                e[3] = kept
    rows = sorted(g.items(), key=lambda kv: (-kv[1][0], kv[0]))[:top]
    out = []
    for site, (b, c, _, kept) in rows:
        r = {"site": site, "bytes": b, "count": c}
        if with_frames:
            r["frames"] = frames_json(kept)
        out.append(r)
    return out


def top_sites(n, top):
    items = ((b[1], b[4]) for s in n.segments for b in s[7] if b[3] != INACTIVE)
    return group_sites(items, n, top, True)


def peak_of(n, top):
    """Spec: backward replay from the end state; returns (peak dict or None, per-device data)."""
    best = None
    per = []
    any_event = False
    for dev, tr in enumerate(n.traces):
        act, size = tr["act"], tr["size"]
        cnt = len(act)
        if any(a in (A_ALLOC, A_FREE_DONE) for a in act):
            any_event = True
        if cnt == 0:
            per.append(None)
            continue
        E = sum(b[2] for s in n.segments if s[0] == dev for b in s[7] if b[3] != INACTIVE)
        after = [0] * cnt
        cur = E
        for i in range(cnt - 1, -1, -1):
            after[i] = cur
            a = act[i]
            if a == A_ALLOC:
                cur = cur - size[i] if cur >= size[i] else 0
            elif a == A_FREE_DONE:
                cur += size[i]
        pk = max(after)
        p = after.index(pk)
        per.append((p, pk, after))
        if best is None or pk > best[1]:
            best = (dev, pk, p)
    if not any_event or best is None:
        return None, per
    dev, pk, p = best
    tr = n.traces[dev]
    alive = alive_at(n, dev, p)
    return {"device": dev, "bytes": pk, "event": p, "time_us": tr["t"][p],
            "top_sites": group_sites(alive, n, top, False)}, per


def alive_at(n, dev, p):
    """Spec (a), (b), (c): allocations alive after event p, as (size, stack)."""
    tr = n.traces[dev]
    act, addr, size, stack = tr["act"], tr["addr"], tr["size"], tr["stack"]
    live = {}
    for i in range(p + 1):
        a = act[i]
        if a == A_ALLOC:
            live[addr[i]] = (size[i], stack[i])
        elif a == A_FREE_DONE:
            live.pop(addr[i], None)
    out = list(live.values())
    seen_alloc = set()
    touched = set()
    for i in range(len(act)):
        a = act[i]
        if a == A_FREE_DONE:
            touched.add(addr[i])
            if i > p and addr[i] not in seen_alloc:
                out.append((size[i], stack[i]))
        elif a == A_ALLOC:
            touched.add(addr[i])
            seen_alloc.add(addr[i])
    for s in n.segments:
        if s[0] != dev:
            continue
        for b in s[7]:
            if b[3] != INACTIVE and b[0] not in touched:
                out.append((b[2], b[4]))
    return out


def undo_oom(n, dev, p, pool_small, stream):
    """The spec's undo replay of the events after the oom event p (for checking)."""
    tr = n.traces[dev]
    segs = {}  # addr -> [size, stream, small, pool]
    active = {}  # addr -> size
    for s in n.segments:
        if s[0] != dev:
            continue
        segs[s[1]] = [s[2], s[3], s[4], s[5]]
        for b in s[7]:
            if b[3] != INACTIVE:
                active[b[0]] = b[1]
    act, addr, size, tstream = tr["act"], tr["addr"], tr["size"], tr["stream"]
    replayed = False
    for i in range(len(act) - 1, p, -1):
        a = act[i]
        replayed = True
        if a == A_ALLOC:
            active.pop(addr[i], None)
        elif a == A_FREE_DONE:
            active[addr[i]] = round512(size[i])
        elif a in (A_SEG_ALLOC, A_SEG_MAP):
            _remove_range(segs, addr[i], size[i])
        elif a in (A_SEG_FREE, A_SEG_UNMAP):
            segs[addr[i]] = [size[i], tstream[i], size[i] <= SMALL_BUFFER, DEFAULT_POOL]
            _coalesce(segs)
    reserved = sum(v[0] for v in segs.values())
    allocated = sum(active.values())
    largest = cache = 0
    starts = sorted(active)
    for sa, (ssize, sstream, ssmall, spool) in segs.items():
        if spool != DEFAULT_POOL or sstream != stream or ssmall != pool_small:
            continue
        cur = sa
        end = sa + ssize
        i = bisect.bisect_left(starts, sa)
        while i < len(starts) and starts[i] < end:
            gap = starts[i] - cur
            if gap > 0:
                cache += gap
                largest = max(largest, gap)
            cur = max(cur, starts[i] + active[starts[i]])
            i += 1
        if end > cur:
            cache += end - cur
            largest = max(largest, end - cur)
    return dict(reserved_bytes=reserved, allocated_bytes=allocated, largest_free_block_bytes=largest,
                cache_free_bytes=cache, replayed=replayed)


def _remove_range(segs, addr, size):
    for sa in list(segs):
        ss = segs[sa]
        se = sa + ss[0]
        if addr >= se or addr + size <= sa:
            continue
        del segs[sa]
        if sa < addr:
            segs[sa] = [addr - sa] + ss[1:]
        if addr + size < se:
            segs[addr + size] = [se - addr - size] + ss[1:]


def _coalesce(segs):
    # adjacent ranges of one expandable reservation read as one segment; plain
    # segments never touch in this simulator except through unmap/map, so merge
    # touching ranges with the same attributes
    keys = sorted(segs)
    i = 0
    while i + 1 < len(keys):
        a, b = keys[i], keys[i + 1]
        if a + segs[a][0] == b and segs[a][1:] == segs[b][1:] and segs[a][0] > 0:
            segs[a][0] += segs[b][0]
            del segs[b]
            del keys[i + 1]
        else:
            i += 1


def verdict(o, capacity):
    req = o["requested_bytes"]
    reserved = o["reserved_bytes"]
    avail = reserved + o["device_free_bytes"]
    if o["cache_free_bytes"] >= req and o["largest_free_block_bytes"] < req:
        return "fragmentation"
    if capacity and "outside_bytes" in o and o["outside_bytes"] >= req and o["outside_bytes"] >= capacity // 10:
        return "outside_allocator"
    if (capacity and req > capacity) or req > avail:
        # freeing tensors of this process cannot make room for it
        return "exceeds_available"
    if reserved > 0 and 2 * o["allocated_bytes"] >= reserved and req <= avail:
        return "live_tensors"
    return "unknown"


def oom_expected(sim, d, n, capacity):
    """The OOM as gpudx must report it: figures from the simulator's state at the
    moment of the oom event; position and stack from the file."""
    cands = []
    for dev, tr in enumerate(n.traces):
        idxs = [i for i, a in enumerate(tr["act"]) if a == A_OOM]
        if idxs:
            p = idxs[-1]
            cands.append((tr["t"][p], -dev, dev, p))
    if not cands:
        return None, None
    cands.sort()
    _, _, dev, p = cands[-1]
    g = d.window_base[dev] + p
    rec = None
    for r in sim.devs[dev].ooms:
        if r["global_event"] == g:
            rec = r
    assert rec is not None, "oom record not found"
    tr = n.traces[dev]
    site, kept = n.site(tr["stack"][p])
    o = {
        "device": dev,
        "requested_bytes": rec["requested_bytes"],
        "device_free_bytes": rec["device_free_bytes"],
        "largest_free_block_bytes": rec["largest_free_block_bytes"],
        "cache_free_bytes": rec["cache_free_bytes"],
        "reserved_bytes": rec["reserved_bytes"],
        "allocated_bytes": rec["allocated_bytes"] + rec["pending_bytes"],
        "pool": rec["pool"],
        "stream": rec["stream"],
        "event": p,
        "source": "trace",
        "replayed": p < len(tr["act"]) - 1,
        "site": site,
        "frames": frames_json(kept),
    }
    o["time_us"] = tr["t"][p]
    if capacity:
        out = capacity - rec["reserved_bytes"] - rec["device_free_bytes"]
        if out >= 0:
            o["outside_bytes"] = out
        o["capacity_bytes"] = capacity
    o["verdict"] = verdict(o, capacity)
    # check against the spec's undo replay
    u = undo_oom(n, dev, p, rec["pool"] == "small", rec["stream"])
    diffs = {k: (o[k], u[k]) for k in ("reserved_bytes", "allocated_bytes", "largest_free_block_bytes",
                                       "cache_free_bytes", "replayed") if o[k] != u[k]}
    return o, diffs


def diff_expected(nb, na, top):
    def group(n):
        g = {}
        for s in n.segments:
            for b in s[7]:
                if b[3] != INACTIVE:
                    site, _ = n.site(b[4])
                    e = g.setdefault(site, [0, 0])
                    e[0] += b[1]
                    e[1] += 1
        return g

    def totals(n):
        return {"reserved_bytes": sum(s[2] for s in n.segments),
                "allocated_bytes": sum(b[1] for s in n.segments for b in s[7] if b[3] == ALLOCATED),
                "blocks": sum(len(s[7]) for s in n.segments)}
    gb, ga = group(nb), group(na)
    rows = []
    for site in set(gb) | set(ga):
        b = gb.get(site, [0, 0])
        a = ga.get(site, [0, 0])
        if a[0] != b[0]:
            rows.append({"site": site, "bytes_before": b[0], "bytes_after": a[0], "delta_bytes": a[0] - b[0],
                         "count_before": b[1], "count_after": a[1]})
    rows.sort(key=lambda r: (-r["delta_bytes"], r["site"]))
    return {"before": totals(nb), "after": totals(na), "sites": rows[:top]}


def expected_report(n, top):
    peak, _ = peak_of(n, top)
    return {
        "info": {"segments": len(n.segments), "blocks": sum(len(s[7]) for s in n.segments),
                 "trace_events": sum(len(t["act"]) for t in n.traces)},
        "devices": devices_figures(n),
        "top_sites": top_sites(n, top),
        "peak": peak,
    }


def check_peak_truth(sim, d, n, peak, context):
    """The peak from the simulator's forward bookkeeping must equal the spec's
    backward replay."""
    problems = []
    best = None
    for dev, tr in enumerate(d.traces):
        inuse = tr["inuse"]
        if len(inuse) == 0:
            continue
        pk = max(inuse)
        p = list(inuse).index(pk)
        if best is None or pk > best[1]:
            best = (dev, pk, p)
    if peak is None:
        return problems
    if best is None or (best[0], best[1], best[2]) != (peak["device"], peak["bytes"], peak["event"]):
        problems.append("peak: simulator %r, spec replay %r" % (best, (peak["device"], peak["bytes"], peak["event"])))
        return problems
    dev, pk, p = best
    g = d.window_base[dev] + p
    alive = []
    tot = 0
    for r in range(len(sim.rec_dev)):
        if sim.rec_dev[r] != dev:
            continue
        if sim.rec_alloc[r] <= g and (sim.rec_free[r] < 0 or sim.rec_free[r] > g):
            tot += sim.rec_size[r]
            lid = sim.rec_lst[r]
            alive.append((sim.rec_size[r], lid))
    if tot != pk:
        problems.append("peak bytes: simulator alive set %d, replay %d" % (tot, pk))
    if context == "alloc":
        # same grouping as the spec when frees carry the allocation's stack
        smap = {}
        items = []
        for size, lid in alive:
            sid = d.lists[lid]
            fr = tuple((d.frames[f][0], d.frames[f][1], norm_line(d.frames[f][2])) for f in d.stacks[sid])
            if fr not in smap:
                smap[fr] = len(n.stacks)
                n.stacks.append(fr)
            items.append((size, smap[fr]))
        truth = group_sites(items, n, 10, False)
        if truth != peak["top_sites"]:
            problems.append("peak sites: simulator %r, replay %r" % (truth, peak["top_sites"]))
    return problems


# ---------------------------------------------------------------------------
# Output

class CountingWriter:
    def __init__(self, f):
        self.f = f
        self.n = 0

    def write(self, b):
        self.n += len(b)
        if self.f is not None:
            self.f.write(b)


def write_dump(d, path, args):
    """Streams the dump to path; returns the uncompressed bytes when verifying."""
    keep = io.BytesIO() if args.verify_now else None
    with open(path, "wb") as raw:
        if args.gzip:
            gz = gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=6)
            sink = gz
        else:
            gz = None
            sink = raw

        class Tee:
            def write(self, b):
                sink.write(b)
                if keep is not None:
                    keep.write(b)
        pw = PickleWriter(Tee(), args.protocol)
        LayoutWriter(d, pw).write()
        if gz is not None:
            gz.close()
    return keep.getvalue() if keep is not None else None, pw.written


def out_paths(args):
    if args.scenario != "leak":
        return {"": args.out}
    base = args.out
    ext = ""
    for e in (".pickle.gz", ".pickle", ".pkl"):
        if base.endswith(e):
            base, ext = base[: -len(e)], e
            break
    return {"before": base + "_before" + ext, "after": base + "_after" + ext}


def command_line():
    argv = [a for a in sys.argv[1:]]
    return "python3 bench/mem/gensnap.py " + " ".join(shlex.quote(a) for a in argv)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="output file (leak: X.pickle gives X_before.pickle and X_after.pickle)")
    ap.add_argument("--layout", default="2.10", choices=LAYOUTS)
    ap.add_argument("--protocol", type=int, default=4, choices=(2, 4, 5))
    ap.add_argument("--gzip", action="store_true")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--scenario", default="steady", choices=sorted(SCENARIOS))
    ap.add_argument("--model", default="tiny", choices=sorted(Model.PRESETS))
    ap.add_argument("--steps", type=int, default=2, help="training steps (steady, outside; leak: per dump)")
    ap.add_argument("--target-bytes", type=parse_size, default=0,
                    help="steady: keep training until the pickle reaches about this size (e.g. 1GB)")
    ap.add_argument("--max-entries", type=int, default=sys.maxsize, help="trace ring size (newest N events kept)")
    ap.add_argument("--capacity", type=parse_size, default=85520809984, help="device memory (default 81559 MiB)")
    ap.add_argument("--outside", type=parse_size, default=0, help="bytes held outside PyTorch on device 0")
    ap.add_argument("--record-capacity", action="store_true",
                    help="put capacity_bytes in the expected json (gpudx then gets --capacity)")
    ap.add_argument("--devices", type=int, default=1)
    ap.add_argument("--expandable", action="store_true", help="expandable_segments:True")
    ap.add_argument("--private-pool", action="store_true", help="capture a CUDA graph into a private pool")
    ap.add_argument("--side-stream", action="store_true", help="prefetch batches on a second stream")
    ap.add_argument("--pending-free", action="store_true", help="leave frees waiting on another stream")
    ap.add_argument("--cpp-frames", action="store_true", help='stacks="all": C++ and interpreter frames')
    ap.add_argument("--context", default="all", choices=("all", "alloc"),
                    help="all: frees record their own stack; alloc: frees reuse the allocation's")
    ap.add_argument("--paths", default="posix", choices=("posix", "windows"))
    ap.add_argument("--after-oom", action="store_true", help="keep running after the OOM (fragmentation)")
    ap.add_argument("--vary", action="store_true", help="vary the sequence length per step")
    ap.add_argument("--hook", action="store_true", help="a forward hook that keeps small copies")
    ap.add_argument("--empty-cache-every", type=int, default=0)
    ap.add_argument("--top", type=int, default=10)
    ap.add_argument("--no-expected", action="store_true")
    ap.add_argument("--verify", choices=("auto", "yes", "no"), default="auto",
                    help="compare with pickle.dumps and re-read the file (auto: files under 64 MB)")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)
    args.side_stream_handle = 0x5581D3A4E650
    if args.layout == "2.0" and (args.expandable or args.private_pool):
        ap.error("2.0 layout has no segment_pool_id/is_expandable")
    if args.target_bytes and args.scenario != "steady":
        ap.error("--target-bytes works with --scenario steady")
    t0 = time.time()
    rng = random.Random(args.seed)
    stacks = Stacks(args.cpp_frames, args.paths)
    sim = Sim(args, rng, stacks)
    models = [Model(sim, d, args.model, random.Random(args.seed * 1000 + d), args) for d in range(args.devices)]
    paths = out_paths(args)
    results = {}

    class Dumps:
        """The workload calls append((tag, None)) at each dump point."""

        def append(self, item):
            tag = item[0]
            results[tag] = write_and_check(sim, Dump(sim, args), paths[tag], args)

    if args.private_pool:
        # capture a CUDA graph right after each model's setup
        for m in models:
            def setup(m=m, orig=m.setup):
                orig()
                scenario_graph(sim, [m], args)
            m.setup = setup
    SCENARIOS[args.scenario](sim, models, args, Dumps())

    if args.scenario == "leak" and not args.no_expected:
        nb = results["before"]["norm"]
        na = results["after"]["norm"]
        exp_after = results["after"]["expected"]
        exp_after["diff"] = diff_expected(nb, na, args.top)
        exp_after["diff_before_file"] = os.path.basename(paths["before"])
        write_expected(paths["after"], exp_after)
    for tag, r in results.items():
        if not args.quiet:
            print("%s: %d bytes (%s), %d events, %d segments, %.1fs" % (
                paths[tag], r["size"], "gzip" if args.gzip else "pickle protocol %d" % args.protocol,
                r["events"], r["segments"], time.time() - t0), file=sys.stderr)
    return 0


def write_expected(path, exp):
    with open(path + ".expected.json", "w") as f:
        json.dump(exp, f, indent=1, sort_keys=False)
        f.write("\n")


def write_and_check(sim, d, path, args):
    est = estimate_size(sim, args)
    args.verify_now = args.verify == "yes" or (args.verify == "auto" and est < 64 * MiB)
    raw, written = write_dump(d, path, args)
    res = {"size": os.path.getsize(path), "events": sum(len(t["act"]) for t in d.traces),
           "segments": len(d.segments)}
    if args.no_expected and not args.verify_now:
        return res
    n = norm_from_dump(d)
    if args.verify_now:
        tree = TreeBuilder(d).build()
        want = pickle.dumps(tree, protocol=args.protocol)
        if want != raw:
            k = next((i for i in range(min(len(want), len(raw))) if want[i] != raw[i]), min(len(want), len(raw)))
            raise SystemExit("verify: streamed pickle differs from pickle.dumps at byte %d (len %d vs %d)" % (
                k, len(raw), len(want)))
        back = pickle.loads(raw)
        n2 = norm_from_pickle(back)
        e1 = expected_report(n, args.top)
        e2 = expected_report(n2, args.top)
        if e1 != e2:
            raise SystemExit("verify: figures from the file differ from figures from the simulator")
        if args.gzip:
            with gzip.open(path, "rb") as f:
                if f.read() != raw:
                    raise SystemExit("verify: gzip content differs")
    if args.no_expected:
        return res
    rep = expected_report(n, args.top)
    problems = check_peak_truth(sim, d, n, rep["peak"], args.context)
    oom, diffs = oom_expected(sim, d, n, args.capacity if args.record_capacity else 0)
    rep["oom"] = oom
    if diffs:
        problems.append("oom: simulator state and the spec's undo replay differ: %r" % diffs)
    for p in problems:
        print("gensnap: WARNING: " + p, file=sys.stderr)
    exp = {
        "generator": {
            "command": command_line(),
            "layout": args.layout,
            "protocol": args.protocol,
            "gzip": args.gzip,
            "scenario": args.scenario,
            "seed": args.seed,
            "file_bytes": res["size"],
            "checks": problems or ["ok"],
        },
        "report": rep,
    }
    if args.record_capacity:
        exp["capacity_bytes"] = args.capacity
    exp["top"] = args.top
    res["expected"] = exp
    res["norm"] = n
    write_expected(path, exp)
    return res


if __name__ == "__main__":
    sys.exit(main())
