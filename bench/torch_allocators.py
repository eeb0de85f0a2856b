"""PyTorch's allocators against memplan on real models, one table: the proof run of issue 12.

    python3 bench/torch_allocators.py --quick            # small shapes, < 3 minutes
    python3 bench/torch_allocators.py                    # full shapes, < 8 minutes
    python3 bench/torch_allocators.py --models dit8k resnet50 --repeats 3
    python3 bench/torch_allocators.py --models vit --pin 4   # each process on CPU core 4

Models (examples/python/): the video DiT denoise loop at 8k and 75.6k tokens (30 blocks, hidden
3072, 24 heads x 128, SDPA outside the window 0.2-1.0 and memplan's tau sparse attention inside
it), a Llama-style decoder and a ViT from transformers configs, torchvision's ResNet-50. Random
seeded weights, nothing downloaded. Allocators, each run in its own process (PyTorch picks its
allocator once per process), in an order that alternates over the repeats:
  caching        PyTorch's caching allocator (the default)
  async          PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync
  memplan        memplan.torch.install(), each step inside memplan.step (eager)
  memplan-graphs the same through memplan.graphs.GraphedStep (CUDA graphs once stable)
  caching-graphs PyTorch's own CUDA graphs over its caching allocator, what a user does without
                 memplan: the same steps as memplan-graphs (eager twice on a side stream, then one
                 torch.cuda.graph capture into its private pool, then replays of it)
Every step is followed by torch.cuda.synchronize(). Per run: the median step time (wall, from the
call to the end of the synchronize) and host time (the call alone), the peaks, memplan's counters
and a SHA-256 of the final output; last, a host probe (microseconds per launch of a one-element
in-place add, 2000 launches: the process's speed at host work, which varies by up to ~2x between
processes on the H200 machine whatever the allocator; step times of runs whose probes differ
are not comparable). Writes <out>/torch_allocators.json and .md.

Memory columns (bytes):
  peak_total       over the measured steps, after each allocator gave back what it held beyond
                   its live memory before the last warm-up step (torch.cuda.empty_cache(),
                   memplan.trim(); memplan-graphs: memplan.graphs.trim(), which also unmaps
                   what the graph's branch does not use): caching/async:
                   torch.cuda.max_memory_reserved(); memplan: the largest mapped_bytes +
                   pool_mapped_bytes sampled after each step
  persistent       what was live before the measured steps (weights, inputs, the output the
                   loop keeps from the last warm-up step): memory_allocated(), or memplan's
                   pool_live_bytes + arena_live_bytes between steps (a kept output may live in
                   either)
  step_peak        peak_total - persistent: what the steps cost on top of the model
  lower_bound      per run: memplan: the planned branch's lower bound (max live bytes of the
                   step's planned buffers, Stats::lower_bound_bytes) less the output carried from
                   the step before (period two: persistent counts it; an output served from the
                   pool is in neither); caching/async:
                   max_memory_allocated() - persistent (every buffer of the step, outputs too).
                   The table's bound of a model is the largest of its eager runs' bounds (each
                   a lower bound of the same step's memory; the largest is the tightest); the
                   two graphs rows take memplan-graphs' graph_branches_bound: the most bytes
                   the branch its graph holds keeps live (from the branch's trace), which is
                   what the step allocates under capture (transformers builds attention masks
                   then that eager steps skip, docs/pytorch.md), while its outputs persist
                   between launches (persistent counts them); without a memplan-graphs run,
                   the largest of the eager bound and the graphs runs' bounds
  device_used      the most device memory in use (cudaMemGetInfo, sampled after each step)
                   minus what was in use before the model was built: the same meter for all
Allocator calls in replayed steps: memplan: backend calls (map, unmap, ...) during the measured
steps (a capture among them copies its inputs into the persistent pool, which may map a chunk);
caching: num_device_alloc + num_device_free during them; async: every allocation is a
cudaMallocAsync call (not counted).
The DiT's sparse steps call memplan.attention under every allocator: under caching and async its
workspace comes from a memplan compiler made for it (persistent pool), in device_used too.
memplan's runs write each branch of the step as a planner problem with its plan beside their JSON
(runs/<model>.<allocator>.<repeat>.<step>.branch<N>.csv, the capture step's "<name>:graph" as
"<name>.graph"; `memplan plan FILE` re-plans one).
Outputs: the DiT's latents after the last step, the other models' last output; "bitwise =
caching" compares their SHA-256 with the caching allocator's (CUBLAS_WORKSPACE_CONFIG=:4096:8, or
--cublas-workspace-config, and deterministic cuDNN in every run); memplan-graphs compares with caching where its outputs equal
caching's, else with caching-graphs where that ran (a captured step may run other kernels than
the eager one: bench/torch_graph_determinism.py). The column names which.
"""

import argparse
import csv
import hashlib
import itertools
import json
import os
import statistics
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ALLOCATORS = ("caching", "async", "memplan", "memplan-graphs", "caching-graphs")
GRAPHS = ("memplan-graphs", "caching-graphs")

# name: (quick settings, full settings); steps are measured after the warm-up steps. memplan-
# graphs needs 6 warm-up steps: record, replay twice (capture_after=2), capture (the capture
# step's first, which records its branch: the graph is dropped), the capture kept, and its first
# launch, which captures once more (GraphedStep's compaction: the eager output the loop held
# during the capture is gone, its room takes the graph's outputs); the trim / empty_cache before
# the last warm-up step comes after it, once the loop dropped the first capture's outputs (what
# eager steps held for their outputs is given back then too). `repeats` caps
# the repeats of a model whose runs are long (dit75k: ~10 GiB of weights made per process).
# dit8k's first four steps run dense attention (outside the window 0.2-1.0 of its 20 steps) and
# the fifth changes path: memplan-graphs then breaks once, records the sparse path, replays it
# twice and captures, so its first launch is step 8 (measured: 2026-12-02, with 16 steps the
# capture fell in the measured steps); 10 warm-up steps keep that out of the measured ones. The
# DiT's loop updates one state tensor in place and keeps it: no output of a call dies, so its
# graphs are never captured again.
MODELS = {
    "dit8k": (dict(tokens=8192, blocks=8, steps=8, warmup=10),
              dict(tokens=8192, blocks=30, steps=10, warmup=10)),
    "dit75k": (None, dict(tokens=75600, blocks=30, steps=3, warmup=6, repeats=1)),
    "llama": (dict(steps=8, warmup=7), dict(steps=10, warmup=7)),
    "vit": (dict(steps=8, warmup=7), dict(steps=10, warmup=7)),
    "resnet50": (dict(steps=8, warmup=7), dict(steps=10, warmup=7)),
}


# ---------------------------------------------------------------------------------------------
# The worker: one model under one allocator, in this process.

def _host_probe_us(launches=2000):
    """Host microseconds per launch of a one-element in-place add: how fast this process
    dispatches work, whatever its allocator (it allocates nothing; run after the measured
    steps). On the H200 machine a process is either fast or slow at every host operation by one
    factor (docs/pytorch.md, the host-time breakdown), so step times of processes whose probes
    differ are not comparable."""
    import torch

    t = torch.zeros(1, device="cuda")
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(launches):
        t.add_(1)
    elapsed = time.perf_counter() - start
    torch.cuda.synchronize()
    return 1e6 * elapsed / launches


def _digest(tensor):
    import torch

    data = tensor.detach().contiguous().flatten().cpu()
    if data.dtype == torch.bfloat16:
        data = data.view(torch.int16)
    return hashlib.sha256(data.numpy().tobytes()).hexdigest()


def _workload(model, settings, quick):
    """(step name, function, args for step i, after-step hook, final output)."""
    sys.path.insert(0, os.path.join(REPO, "examples", "python"))
    if model.startswith("dit"):
        import dit_denoise

        net = dit_denoise.build_model(blocks=settings["blocks"])
        total = settings["warmup"] + settings["steps"]
        loop = dit_denoise.DenoiseLoop(net, settings["tokens"], total)
        return "denoise", loop.euler_step, loop.step_args, loop.advance, lambda: loop.x
    if model == "resnet50":
        import resnet50

        net, inputs = resnet50.build_resnet50(quick=quick)
        fn = net
    else:
        import hf_models

        net, inputs = hf_models.BUILDERS[model](quick=quick)
        fn = hf_models.forward_fn(model, net)
    last = {}

    def keep(out):
        last["out"] = out

    return model, fn, lambda i: inputs, keep, lambda: last["out"]


def _torch_stat(call):
    """A PyTorch memory statistic, or None where the allocator backend does not keep it."""
    try:
        return call()
    except RuntimeError as e:
        print(f"torch_allocators: {call.__name__} unavailable: {e}", file=sys.stderr)
        return None


class TorchGraphed:
    """The caching-graphs row: PyTorch's CUDA graphs without memplan, with GraphedStep's policy
    (a side stream; eager `capture_after` times; then one capture whose tensor arguments are
    copied into static inputs; then replays returning the static outputs)."""

    def __init__(self, fn, capture_after=2):
        import torch

        self.fn, self.capture_after, self.calls = fn, capture_after, 0
        self.stream = torch.cuda.Stream()
        self.graph = self.static_inputs = self.static_outputs = None
        self.stats = {"graph_launches": 0, "capture_failures": 0}

    def __call__(self, *args):
        import torch

        caller = torch.cuda.current_stream()
        self.stream.wait_stream(caller)
        try:
            with torch.cuda.stream(self.stream):
                if self.graph is None and self.calls >= self.capture_after:
                    self.static_inputs = [a.clone() if isinstance(a, torch.Tensor) else a
                                          for a in args]
                    self.graph = torch.cuda.CUDAGraph()
                    with torch.cuda.graph(self.graph, stream=self.stream):
                        self.static_outputs = self.fn(*self.static_inputs)
                if self.graph is None:
                    return self.fn(*args)
                for static, a in zip(self.static_inputs, args):
                    if isinstance(a, torch.Tensor) and static.data_ptr() != a.data_ptr():
                        static.copy_(a)
                self.graph.replay()
                self.stats["graph_launches"] += 1
                return self.static_outputs
        finally:
            self.calls += 1
            caller.wait_stream(self.stream)


def _write_branch_traces(steps, json_path):
    """Each recorded branch of the steps as a planner problem with its plan (CSV beside the run's
    JSON, for `memplan plan` to re-plan); returns {(step, branch): path}."""
    import memplan

    paths = {}
    for step in steps:
        for branch in itertools.count():
            path = json_path[:-len(".json")] + f".{step.replace(':', '.')}.branch{branch}.csv"
            try:
                memplan.write_branch_trace(path, step, branch)
            except memplan.InvalidArgument:
                break
            paths[(step, branch)] = path
    return paths


def _max_live_bytes(trace_csv):
    """The most bytes of a branch's buffers live at once: its lower bound."""
    events = []
    with open(trace_csv) as f:
        for row in csv.DictReader(f):
            size = int(row["size"])
            events += [(int(row["lower"]), size), (int(row["upper"]), -size)]
    live = most = 0
    for _, change in sorted(events, key=lambda e: (e[0], e[1] > 0)):  # frees first at a tie
        live += change
        most = max(most, live)
    return most


def worker(args):
    import torch

    sys.path.insert(0, os.path.join(REPO, "python"))
    import memplan

    memplan_mode = args.allocator.startswith("memplan")
    if memplan_mode:
        memplan.torch.install(share_pool_chunk=False if args.no_share_pool_chunk else None)
    torch.cuda.init()
    free, total = torch.cuda.mem_get_info()
    used_before = total - free
    settings = MODELS[args.model][0 if args.quick else 1]
    name, fn, step_args, after, final = _workload(args.model, settings, args.quick)
    graphed = None
    if args.allocator == "caching-graphs":
        graphed = TorchGraphed(fn, capture_after=2)
    if memplan_mode:  # memplan: GraphedStep (enabled=False: `with memplan.step`, nothing more)
        graphed = memplan.graphs.GraphedStep(name, fn, capture_after=2,
                                             enabled=args.allocator == "memplan-graphs")
    torch.cuda.synchronize()

    def memplan_total(stats):
        return stats["mapped_bytes"] + stats["pool_mapped_bytes"]

    steps = settings["warmup"] + settings["steps"]
    step_ms, host_ms, used_peak, total_peak = [], [], 0, 0
    before = after_warmup = None
    with torch.no_grad():
        for i in range(steps):
            if i == settings["warmup"] - 1:
                # Before the last warm-up step, each allocator gives back what it holds beyond
                # its live memory, as a long-running program would once its first steps are
                # done (memplan's learned sites map their room again in that step); the peaks are
                # then the steady state's, over the measured steps.
                torch.cuda.synchronize()
                if args.allocator == "memplan-graphs":
                    memplan.graphs.trim()  # what the live graph's branch does not use goes too
                elif memplan_mode:
                    memplan.trim()
                else:
                    torch.cuda.empty_cache()
            if i == settings["warmup"]:
                torch.cuda.synchronize()
                if memplan_mode:
                    total_peak = 0
                    after_warmup = memplan.stats()
                else:
                    before = _torch_stat(torch.cuda.memory_allocated)
                    _torch_stat(torch.cuda.reset_peak_memory_stats)
                    after_warmup = _torch_stat(torch.cuda.memory_stats) or {}
            a = step_args(i)
            start = time.perf_counter()
            if graphed is not None:
                out = graphed(*a)
            else:
                out = fn(*a)
            called = time.perf_counter()
            torch.cuda.synchronize()
            done = time.perf_counter()
            after(out)
            del out
            free, _ = torch.cuda.mem_get_info()
            used_peak = max(used_peak, total - free - used_before)
            if memplan_mode:
                total_peak = max(total_peak, memplan_total(memplan.stats()))
            if i >= settings["warmup"]:
                step_ms.append(1e3 * (done - start))
                host_ms.append(1e3 * (called - start))
    torch.cuda.synchronize()
    result = {
        "model": args.model, "allocator": args.allocator, "settings": settings,
        "median_step_ms": statistics.median(step_ms), "median_host_ms": statistics.median(host_ms),
        "step_ms": step_ms, "device_used_bytes": used_peak, "output_sha256": _digest(final()),
        "torch": torch.__version__, "device": torch.cuda.get_device_name(),
    }
    if memplan_mode:
        stats = memplan.stats()
        traces = _write_branch_traces([name, graphed.capture_name], args.json)
        calls = {k: v - after_warmup["backend_calls"][k] for k, v in stats["backend_calls"].items()}
        result.update({
            "peak_total_bytes": total_peak,
            "persistent_bytes": (after_warmup["pool_live_bytes"]
                                 + after_warmup["arena_live_bytes"]),
            # The plan's bound counts the output carried from the step before (period two),
            # which persistent_bytes counts too.
            "lower_bound_bytes": stats["lower_bound_bytes"] - after_warmup["live_carried_bytes"],
            # memplan-graphs: what the graphs' branches keep live at most (their outputs
            # included), the memory a launch needs on top of the persistent bytes.
            "graph_branches_bound_bytes": max(
                (_max_live_bytes(traces[(step, branch)]) for step, branch, _ in
                 graphed.held_branches() if (step, branch) in traces), default=None),
            "planned_peak_bytes": stats["planned_peak_bytes"],
            "breaks": stats["breaks"], "branches": stats["branches"], "rogues": stats["rogues"],
            "allocator_calls_measured": sum(calls.values()),
            "measured_steps_not_replayed": (
                stats["steps_recorded"] - after_warmup["steps_recorded"]
                + stats["steps_dynamic"] - after_warmup["steps_dynamic"]),
            "graphs": dict(graphed.stats), "capture_error": graphed.last_capture_error,
            "stats": stats,
            "branch_traces": [os.path.relpath(p, os.path.dirname(args.json))
                              for p in traces.values()],
        })
    else:
        stats = _torch_stat(torch.cuda.memory_stats) or {}
        allocated = _torch_stat(torch.cuda.max_memory_allocated)
        result.update({
            "peak_total_bytes": _torch_stat(torch.cuda.max_memory_reserved),
            "persistent_bytes": before,
            "lower_bound_bytes": None if None in (allocated, before) else allocated - before,
        })
        if graphed is not None:
            result["graphs"] = dict(graphed.stats)
        if args.allocator.startswith("caching") and "num_device_alloc" in stats:
            result["allocator_calls_measured"] = (
                stats["num_device_alloc"] - after_warmup.get("num_device_alloc", 0)
                + stats["num_device_free"] - after_warmup.get("num_device_free", 0))
    peak, persistent = result["peak_total_bytes"], result["persistent_bytes"]
    result["step_peak_bytes"] = None if None in (peak, persistent) else peak - persistent
    try:  # last: its tensor comes after every counter read; a failure costs the probe only
        result["host_probe_us"] = _host_probe_us()
    except Exception as e:  # recorded in the run, not raised
        result["host_probe_error"] = f"{type(e).__name__}: {e}"
    with open(args.json, "w") as f:
        json.dump(result, f, indent=1)


# ---------------------------------------------------------------------------------------------
# The driver: every model under every allocator, each in its own process.

def cublas_environment(env, setting):
    """CUBLAS_WORKSPACE_CONFIG for every run: `setting`, or unset with "none" (cuBLAS's own
    default, much faster for ViT: bench/torch_host_time.py measured ~12 ms a step against ~35
    with :4096:8 on the H200, 2026-12-02)."""
    if setting == "none":
        env.pop("CUBLAS_WORKSPACE_CONFIG", None)
    else:
        env["CUBLAS_WORKSPACE_CONFIG"] = setting
    return env


def run_one(model, allocator, quick, out_dir, repeat, timeout, pin=None, cublas=":4096:8",
            no_share_pool_chunk=False):
    path = os.path.join(out_dir, "runs", f"{model}.{allocator}.{repeat}.json")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    env = dict(os.environ)
    env.pop("PYTORCH_CUDA_ALLOC_CONF", None)
    if allocator == "async":
        env["PYTORCH_CUDA_ALLOC_CONF"] = "backend:cudaMallocAsync"
    cublas_environment(env, cublas)  # the same cuBLAS setup in every run
    env["PYTHONPATH"] = os.path.join(REPO, "python") + os.pathsep + env.get("PYTHONPATH", "")
    command = [sys.executable, os.path.abspath(__file__), "--worker", "--model", model,
               "--allocator", allocator, "--json", path] + (["--quick"] if quick else []) \
        + (["--no-share-pool-chunk"] if no_share_pool_chunk else [])
    if pin is not None:  # the whole process on one core, as torch_host_time.py runs its rounds
        command = ["taskset", "-c", str(pin)] + command
    start = time.perf_counter()
    try:
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"model": model, "allocator": allocator, "error": f"timed out after {timeout} s"}
    seconds = time.perf_counter() - start
    if done.returncode != 0 or not os.path.exists(path):
        tail = (done.stdout + done.stderr)[-3000:]
        return {"model": model, "allocator": allocator, "error": f"exit {done.returncode}: {tail}"}
    with open(path) as f:
        result = json.load(f)
    result["process_seconds"] = seconds
    result["pinned_core"] = pin
    return result


def _earlier_run(model, allocator, repeat, out_dir):
    """--resume: the record a run of an earlier invocation left in <out>/runs, if any."""
    path = os.path.join(out_dir, "runs", f"{model}.{allocator}.{repeat}.json")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        result = json.load(f)
    result.setdefault("process_seconds", 0.0)
    return result


def _gib(b):
    return "-" if b is None else f"{b / 2**30:.2f}"


def _most(values):
    """The largest of the values that are not None; None if there are none."""
    present = [v for v in values if v is not None]
    return max(present) if present else None


def _reference_for(model, allocator, ok, reference):
    """Whose outputs a row is compared with: caching's, except memplan-graphs, which is compared
    with caching-graphs where that ran (a captured step may run other kernels than the eager one:
    bench/torch_graph_determinism.py) unless it equals caching's eager outputs. caching-graphs
    can be the one that differs: it captures once and replays that path for good, so a step
    whose path changes later (the DiT's attention window) keeps running the captured one."""
    if allocator != "memplan-graphs" or (model, "caching-graphs") not in reference:
        return "caching"
    eager = reference.get((model, "caching"), set())
    if len(eager) == 1 and all(r["output_sha256"] in eager for r in ok):
        return "caching"
    return "caching-graphs"


def summarise(runs):
    """One row per (model, allocator): medians over repeats, worst memory, output equality."""
    rows = []
    reference = {}  # (model, allocator compared with) -> digests
    for r in runs:
        if r.get("allocator") in ("caching", "caching-graphs") and "output_sha256" in r:
            reference.setdefault((r["model"], r["allocator"]), set()).add(r["output_sha256"])
    for model in dict.fromkeys(r["model"] for r in runs):
        # Eager runs make one allocation sequence; a capture makes its own (PyTorch allocates
        # differently under torch.cuda.graph), so the graphs row also counts its own bound.
        eager_bound = _most(r.get("lower_bound_bytes") for r in runs
                            if r["model"] == model and r["allocator"] not in GRAPHS
                            and "error" not in r)
        # A launch allocates nothing: the graphs rows' bound is what the graph's branch keeps
        # live (memplan-graphs knows it; its outputs persist between launches, so an eager
        # step's bound, which counts a new output, is not one). Without it, the old rule.
        graphs_bound = _most(r.get("graph_branches_bound_bytes") for r in runs
                             if r["model"] == model and r["allocator"] in GRAPHS
                             and "error" not in r) or _most([eager_bound] + [
            r.get("lower_bound_bytes") for r in runs
            if r["model"] == model and r["allocator"] in GRAPHS and "error" not in r])
        for allocator in ALLOCATORS:
            mine = [r for r in runs if r["model"] == model and r["allocator"] == allocator]
            if not mine:
                continue
            ok = [r for r in mine if "error" not in r]
            row = {"model": model, "allocator": allocator, "runs": len(mine),
                   "errors": [r["error"] for r in mine if "error" in r]}
            if ok:
                bound = graphs_bound if allocator in GRAPHS else eager_bound
                step_peak = _most(r["step_peak_bytes"] for r in ok)
                compared = _reference_for(model, allocator, ok, reference)
                refs = reference.get((model, compared), set())
                row.update({
                    "peak_total_bytes": _most(r["peak_total_bytes"] for r in ok),
                    "step_peak_bytes": step_peak,
                    "lower_bound_bytes": bound,
                    "step_peak_over_lower_bound": (
                        step_peak / bound if bound and step_peak is not None else None),
                    "device_used_bytes": _most(r["device_used_bytes"] for r in ok),
                    "median_step_ms": statistics.median(s for r in ok for s in r["step_ms"]),
                    "median_host_ms": statistics.median(r["median_host_ms"] for r in ok),
                    "host_probe_us": (
                        None if any("host_probe_us" not in r for r in ok)
                        else statistics.median(r["host_probe_us"] for r in ok)),
                    # Each run's median step and probe, by repeat: one slow process moves a
                    # median over repeats, and the probe says which process it was.
                    "per_repeat": [
                        (statistics.median(r["step_ms"]), r.get("host_probe_us"))
                        for r in sorted(ok, key=lambda r: r.get("repeat", 0))],
                    "breaks": _most(r.get("breaks") for r in ok),
                    "branches": _most(r.get("branches") for r in ok),
                    "rogues": _most(r.get("rogues") for r in ok),
                    "graph_launches": sum(r.get("graphs", {}).get("graph_launches", 0) for r in ok),
                    "capture_failures": sum(r.get("graphs", {}).get("capture_failures", 0)
                                            for r in ok),
                    "allocator_calls_measured": (
                        None if any("allocator_calls_measured" not in r for r in ok)
                        else _most(r["allocator_calls_measured"] for r in ok)),
                    "compared_with": compared,
                    "bitwise_equal_to_caching": (
                        None if not refs else
                        all(r["output_sha256"] in refs for r in ok) and len(refs) == 1),
                })
            rows.append(row)
    return rows


def markdown(rows, header):
    lines = [header, "",
             "| model | allocator | peak total GiB | step peak GiB | lower bound GiB | step peak / "
             "bound | device used GiB | median step ms | host ms/step | breaks (branches) | rogues"
             " | graph launches | allocator calls, measured steps | bitwise = caching "
             "| host probe us | per repeat: step ms (probe us) |",
             "|" + "---|" * 16]
    for r in rows:
        if "median_step_ms" not in r:
            lines.append(f"| {r['model']} | {r['allocator']} | failed: "
                         f"{r['errors'][0].splitlines()[-1][:120] if r['errors'] else '?'} |"
                         + " |" * 14)
            continue
        ratio = r["step_peak_over_lower_bound"]
        breaks = "-" if r["breaks"] is None else f"{r['breaks']} ({r['branches']})"
        calls = r["allocator_calls_measured"]
        equal = r["bitwise_equal_to_caching"]
        if equal is not None and r.get("compared_with", "caching") != "caching":
            equal = f"{equal} (vs {r['compared_with']})"
        probe = r.get("host_probe_us")
        launches = str(r["graph_launches"]) + (
            f" ({r['capture_failures']} capture failed)" if r["capture_failures"] else "")
        lines.append(
            f"| {r['model']} | {r['allocator']} | {_gib(r['peak_total_bytes'])} | "
            f"{_gib(r['step_peak_bytes'])} | {_gib(r['lower_bound_bytes'])} | "
            f"{'-' if ratio is None else f'{ratio:.3f}'} | {_gib(r['device_used_bytes'])} | "
            f"{r['median_step_ms']:.2f} | {r['median_host_ms']:.2f} | {breaks} | "
            f"{'-' if r['rogues'] is None else r['rogues']} | {launches} | "
            f"{'-' if calls is None else calls} | {'-' if equal is None else equal} | "
            f"{'-' if probe is None else f'{probe:.1f}'} | {_per_repeat(r)} |")
    return "\n".join(lines) + "\n"


def _per_repeat(row):
    """'15.47 (6.8) / 17.26 (7.3)': each run's median step ms, with its host probe if it has one."""
    return " / ".join(f"{ms:.2f}" + ("" if probe is None else f" ({probe:.1f})")
                      for ms, probe in row.get("per_repeat", []))


def driver(args):
    models = args.models or [m for m, s in MODELS.items() if s[0 if args.quick else 1]]
    for m in models:
        if m not in MODELS or MODELS[m][0 if args.quick else 1] is None:
            sys.exit(f"torch_allocators: model {m} has no {'quick' if args.quick else 'full'} "
                     f"settings (models: {', '.join(MODELS)})")
    repeats = args.repeats or (1 if args.quick else 2)
    runs, start = [], time.perf_counter()
    for repeat in range(repeats):
        chosen = tuple(a for a in ALLOCATORS if a in (args.allocators or ALLOCATORS))
        order = chosen if repeat % 2 == 0 else tuple(reversed(chosen))
        for model in models:
            if repeat >= MODELS[model][0 if args.quick else 1].get("repeats", repeats):
                continue
            for allocator in order:
                r = (_earlier_run(model, allocator, repeat, args.out) if args.resume else None) \
                    or run_one(model, allocator, args.quick, args.out, repeat, args.timeout,
                               args.pin, args.cublas_workspace_config, args.no_share_pool_chunk)
                r["repeat"] = repeat
                runs.append(r)
                status = r.get("error", "").splitlines()[-1:] or [
                    f"{r['median_step_ms']:.2f} ms/step, step peak {_gib(r['step_peak_bytes'])} "
                    f"GiB, {r['process_seconds']:.0f} s"]
                print(f"[{time.perf_counter() - start:6.0f} s] {model:9s} {allocator:15s} "
                      f"repeat {repeat}: {status[0]}", flush=True)
    rows = summarise(runs)
    device = next((r["device"] for r in runs if "device" in r), "?")
    torch_version = next((r["torch"] for r in runs if "torch" in r), "?")
    header = (f"torch_allocators ({'quick' if args.quick else 'full'}, {repeats} repeat(s), "
              f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {device}, "
              f"PyTorch {torch_version}, CUBLAS_WORKSPACE_CONFIG "
              f"{args.cublas_workspace_config}"
              f"{', memplan share_pool_chunk off' if args.no_share_pool_chunk else ''})")
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "torch_allocators.json"), "w") as f:
        json.dump({"header": header, "rows": rows, "runs": runs}, f, indent=1)
    table = markdown(rows, header)
    with open(os.path.join(args.out, "torch_allocators.md"), "w") as f:
        f.write(table)
    print(table)
    print(f"written to {args.out}/torch_allocators.json and .md "
          f"({time.perf_counter() - start:.0f} s)")
    return 1 if any(r["errors"] for r in rows) else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small shapes, few steps")
    parser.add_argument("--models", nargs="*", help=f"a subset of {', '.join(MODELS)}")
    parser.add_argument("--repeats", type=int, default=0, help="default: 1 quick, 2 full")
    parser.add_argument("--allocators", nargs="*", choices=ALLOCATORS,
                        help="a subset of the allocators (default: all)")
    parser.add_argument("--out", default=os.path.join(REPO, "build", "torch_allocators"))
    parser.add_argument("--timeout", type=int, default=300, help="seconds per run")
    parser.add_argument("--pin", type=int,
                        help="run each process on this CPU core (taskset), as "
                             "bench/torch_host_time.py --pin does")
    parser.add_argument("--cublas-workspace-config", default=":4096:8",
                        help="CUBLAS_WORKSPACE_CONFIG of every run (deterministic cuBLAS for the "
                             "bitwise column); 'none' leaves it unset")
    parser.add_argument("--resume", action="store_true",
                        help="take the runs already recorded in <out>/runs instead of running "
                             "them again (a table of several repeats made in several sittings)")
    parser.add_argument("--no-share-pool-chunk", action="store_true",
                        help="memplan rows: the pool keeps its top chunk to itself "
                             "(memplan.torch.install(share_pool_chunk=False); on by default)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--model", help=argparse.SUPPRESS)
    parser.add_argument("--allocator", choices=ALLOCATORS, help=argparse.SUPPRESS)
    parser.add_argument("--json", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return 0
    return driver(args)


if __name__ == "__main__":
    sys.exit(main())
