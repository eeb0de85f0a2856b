"""A step run through memplan and, once its branch replays stably, as a torch.cuda.CUDAGraph:
the Python twin of the C++ capture layer (include/memplan/capture/step_runner.hpp).

    denoise = memplan.graphs.GraphedStep("denoise", lambda x, t: model(x, t))
    for t in timesteps:                      # t: a CUDA tensor, not a Python number
        x = denoise(x, t)

Each call is keyed by its arguments' shapes, dtypes, devices and strides (and the values of
non-tensor arguments). Under one key:
  - eager: the function runs inside `with memplan.step(name)`; a step that replayed its branch
    (no break, nothing recorded) counts towards `capture_after`; any other resets the count;
  - capture: after `capture_after` replayed steps in a row, the next call copies its tensor
    arguments into static buffers (from the persistent pool, inside memplan.pause()) and runs the
    function once more inside torch.cuda.graph, as a step of its own, `capture_name` (default
    name + ":graph"). If that step replayed, every address the graph holds is one the plan hands
    out every step, so the graph is kept and launched; if it did not (the first capture of a key
    records its branch; a break), the graph is dropped and the call runs eagerly. The capture
    has its own step name because a function may allocate differently under capture
    (transformers builds attention masks then that eager calls skip): as a branch of the eager
    step it would have to keep the eager branch's offsets for their shared first buffers, and
    those offsets, chosen for the eager branch alone, can cost the capture's plan several percent
    (ViT: 353 MiB against a bound of 345, docs/pytorch.md); its own step is planned alone. So a
    call that captured without replaying is retried at once at the next call; a second in a row
    goes back to counting eager replays;
  - graph: later calls copy their arguments into the static buffers and launch the graph; the
    function does not run, so memplan sees no step. The result is the same static output tensors
    every time (clone what you keep across calls, as with any CUDA graph).
Eager steps, the capture and the launches all run on one side stream of this helper (waiting for
the caller's current stream first, and the current stream waits for it after); PyTorch's
per-stream state for it (the cuBLAS workspaces) is made when the stream is, in a memplan pause
(memplan.torch.warm_up), not in a step and not during the capture. A key whose capture fails
(the function synchronises with the host, say) stays eager. With enabled=False nothing new is
captured (graphs captured while it was True still launch); a GraphedStep never enabled runs each
call as `with memplan.step(name)` on the caller's stream (warmed up once, as the side stream is).
Before each capture the helper calls memplan.settle() (with share_pool_chunk, on by default, the
plans go home into the pool's top chunk when nothing lives in the arena; a no-op otherwise); a
settle that finds no memory to map them at home (OutOfMemory, nothing of the arena mapped then)
is counted in stats["settle_failures"] and the capture goes on, mapping its plan where it is.
Compaction (compact=True, the default): a capture allocates its static outputs while the caller
still holds the output of the call before (`out = step(x)` keeps it until the call returns), so
they land past it in the persistent pool. When every output the caller held during the capture
has died and one of them lay below the graph's outputs, the next launch captures once more, on
the same static inputs (no new step name, no settle: the plans stay where the graph has them);
the new static outputs go where the pool puts them now (the lowest block that fits in their size
class: the room the dead output left, if it holds them), and the new graph is kept only if it
replayed the same branch and its outputs end lower than the old ones (else it is dropped and the
old one launches). The old
outputs become free pool memory once the caller drops them; memplan.graphs.trim() unmaps them.
So, once per key, the result is new tensors: use each call's return value (as with any graph,
clone what you keep).
Graphs are dropped when the compiler's plans move (stats: window_moves), when a step leaves an
output in the plans that the graph does not know (stats: carried_outputs; a step output kept until
the next one exists is planned in the arena with period two, docs/compiler.md, and a graph
launched outside steps could overwrite it) or memplan.release() runs (it unmaps the addresses
they hold).
memplan.graphs.trim() is memplan.trim() for a program that launches graphs: it keeps mapped only
what the live graphs' branches use (each graph remembers the branch and parity its capture step
replayed) and the live buffers; an eager step of another branch maps back what it uses then.
The contract, as for the C++ layer: under one key the function's kernels must depend only on the
tensors' contents, not on host values that change per call (pass a timestep as a tensor).
"""

import contextlib
import weakref

from . import api, errors

_live_steps = weakref.WeakSet()


def _drop_all_graphs():
    for graphed in list(_live_steps):
        graphed.invalidate_all()


api._release_hooks.append(_drop_all_graphs)


def trim(device=None):
    """Between steps: unmaps the planned memory that no live graph of this device holds and no
    live buffer uses (memplan.trim_to over every GraphedStep's graphs); memplan.trim() when no
    graph lives."""
    device = api._device(device)
    held = sorted({branch for graphed in list(_live_steps) if graphed.device == device
                   for branch in graphed.held_branches()})
    if held:
        api.trim_to(held, device)
    else:
        api.trim(device)


def _tensors(value, tensor_type):
    """The tensors in a step's result: itself, or those in its tuples, lists and dicts (a
    transformers ModelOutput is a dict)."""
    if isinstance(value, tensor_type):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _tensors(v, tensor_type)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _tensors(v, tensor_type)


def _extent(tensors):
    """(lowest address, highest end) of the tensors' bytes."""
    spans = [(t.data_ptr(), t.data_ptr() + t.nbytes) for t in tensors]
    return min(s for s, _ in spans), max(e for _, e in spans)


class _Entry:
    def __init__(self):
        self.stable = 0
        self.uncapturable = False  # a capture failed (the function synchronises, say): eager
        self.broken_captures = 0  # in a row; the first is retried at the next call
        self.graph = None
        self.static_inputs = None
        self.static_outputs = None
        self.plans_epoch = None  # (window_moves, carried_outputs) when captured
        self.branch = None  # (step name, branch, parity) that the capture step replayed
        # The caller's earlier outputs live during the capture (weakrefs) when one of them lay
        # below the graph's outputs: once all are dead, a recapture may place the outputs lower.
        self.held_at_capture = None


class GraphedStep:
    def __init__(self, name, fn, capture_after=2, enabled=True, device=None, capture_name=None,
                 compact=True):
        if capture_after < 1:
            raise ValueError(f"capture_after must be >= 1, got {capture_after}")
        self.name, self.fn = name, fn
        self.capture_name = f"{name}:graph" if capture_name is None else capture_name
        if self.capture_name == name:
            raise ValueError(f"capture_name must differ from the step name {name!r}")
        self.capture_after, self.enabled, self.compact = capture_after, enabled, compact
        self.device = api.default_device() if device is None else device
        self._stream = None  # made with the first call that may capture
        self.stats = {"steps": 0, "eager_steps": 0, "captures": 0, "graph_launches": 0,
                      "breaks": 0, "invalidations": 0, "capture_failures": 0,
                      "recaptures": 0, "recaptures_dropped": 0, "settle_failures": 0}
        self.last_result = None  # end_step's dict of the last step the function ran in
        self.last_path = None  # how the last call ran: "eager", "captured", "recaptured", "graph"
        self.last_capture_error = None
        self._entries = {}
        self._last_outputs = []  # weakrefs to the tensors of the last call's result
        _live_steps.add(self)

    @property
    def stream(self):
        """The side stream of eager steps, captures and launches (made on first use, between
        steps)."""
        if self._stream is None:
            import torch

            from . import torch as memplan_torch

            self._stream = torch.cuda.Stream(device=self.device)
            memplan_torch.warm_up(self._stream, self.device)
        return self._stream

    @staticmethod
    def _key(args):
        import torch

        key = []
        for a in args:
            if isinstance(a, torch.Tensor):
                key.append(("tensor", tuple(a.shape), a.dtype, str(a.device), a.stride()))
            else:
                key.append(("value", a))
        return tuple(key)

    def held_branches(self):
        """(step name, branch, parity) of each graph that can still launch: the plans it holds."""
        return [entry.branch for entry in list(self._entries.values())
                if entry.graph is not None and not self._moved(entry)]

    def invalidate_all(self):
        for entry in self._entries.values():
            if entry.graph is not None:
                self.stats["invalidations"] += 1
            entry.graph = entry.static_inputs = entry.static_outputs = None
            entry.stable = 0
        self._entries.clear()

    def __call__(self, *args):
        import torch

        self.stats["steps"] += 1
        if not self.enabled and not self._entries:
            # Never enabled: no graph to launch, nothing to count towards a capture, no side
            # stream to capture on; the step alone, on a stream whose cuBLAS workspaces exist
            # (warm_up does that once per stream; in a step they would be rogues).
            from . import torch as memplan_torch

            memplan_torch.warm_up(device=self.device)
            return self._eager(None, args)
        key = self._key(args)
        entry = self._entries.setdefault(key, _Entry())
        caller = torch.cuda.current_stream(self.device)
        self.stream.wait_stream(caller)
        try:
            with torch.cuda.stream(self.stream):
                launchable = entry.graph is not None and not self._moved(entry)
                recaptured = False
                if launchable and self._room_freed_below(entry):
                    recaptured = self._recapture(entry)
                    launchable = not self._moved(entry)  # a recapture that breaks may move plans
                if launchable:
                    out = self._launch(entry, args)
                    self.last_path = "recaptured" if recaptured else "graph"
                elif (self.enabled and not entry.uncapturable
                      and entry.stable >= self.capture_after):
                    out = self._capture(entry, args)
                else:
                    out = self._eager(entry, args)
        finally:
            caller.wait_stream(self.stream)
        self._last_outputs = [weakref.ref(t) for t in _tensors(out, torch.Tensor)]
        return out

    def _plans_epoch(self):
        return api.plan_epoch(self.device)

    def _moved(self, entry):
        if self._plans_epoch() == entry.plans_epoch:
            return False
        entry.graph = entry.static_inputs = entry.static_outputs = None
        entry.stable = 0
        self.stats["invalidations"] += 1
        return True

    def _run_step(self, args):
        with api.step(self.name, self.device) as s:
            out = self.fn(*args)
        self.last_result = s.result
        if s.result["break_reason"] is not None:
            self.stats["breaks"] += 1
        return out, s.result

    def _eager(self, entry, args):
        self.stats["eager_steps"] += 1
        self.last_path = "eager"
        out, result = self._run_step(args)
        if entry is not None:
            entry.stable = entry.stable + 1 if result["replayed"] else 0
        return out

    def _launch(self, entry, args):
        import torch

        for static, a in zip(entry.static_inputs, args):
            if isinstance(a, torch.Tensor) and static.data_ptr() != a.data_ptr():
                static.copy_(a)
        entry.graph.replay()
        self.stats["graph_launches"] += 1
        return entry.static_outputs

    def _capture(self, entry, args):
        import torch

        with api.pause(self.device):
            static_inputs = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
        # The graph freezes the plans' addresses: with share_pool_chunk, they go home first (into
        # the pool's top chunk) if nothing lives in the arena. A move stales the other keys'
        # graphs (plan epoch), which recapture.
        try:
            api.settle(self.device)
        except errors.OutOfMemory:
            self.stats["settle_failures"] += 1  # an optimisation missed: the capture goes on
        captured = self._captured_step(static_inputs)
        if captured is None:
            entry.uncapturable = True
            return self._eager(entry, args)
        graph, outputs, result = captured
        if not result["replayed"]:
            self.stats["breaks"] += result["break_reason"] is not None
            entry.broken_captures += 1
            del captured, graph, outputs  # the recording capture's memory, before the eager run
            out = self._eager(entry, args)
            # The capture's branch is recorded now: retry once, if the eager run replayed.
            retry = entry.broken_captures == 1 and entry.stable > 0
            entry.stable = self.capture_after if retry else 0
            return out
        entry.broken_captures = 0
        entry.graph, entry.static_inputs, entry.static_outputs = graph, static_inputs, outputs
        entry.plans_epoch = self._plans_epoch()
        entry.branch = (self.capture_name, result["branch"], result["parity"])
        self.stats["captures"] += 1
        entry.held_at_capture = self._held_below(outputs) if self.compact else None
        out = self._launch(entry, args)
        self.last_path = "captured"
        return out

    def _captured_step(self, inputs):
        """The function captured on `inputs` as a step of its own (capture_name): (graph,
        outputs, the step's result), or None when the capture failed (the error is kept)."""
        import torch

        graph = torch.cuda.CUDAGraph()
        try:
            # "relaxed": a break inside the capture maps memory (a driver call that global mode
            # forbids during capture); the step then did not replay and the graph is dropped.
            # The capture is entered in a pause: capture_begin allocates the CUDA generators'
            # seed and offset (8 B each), which live with the graph, not the step, and would
            # otherwise be two unknown allocations at the start of the step (a break).
            with api.step(self.capture_name, self.device) as s, contextlib.ExitStack() as capture:
                with api.pause(self.device):
                    capture.enter_context(torch.cuda.graph(graph, stream=self.stream,
                                                           capture_error_mode="relaxed"))
                outputs = self.fn(*inputs)
        except Exception as e:
            self.stats["capture_failures"] += 1
            self.last_capture_error = f"{type(e).__name__}: {e}"
            return None
        self.last_result = s.result
        return graph, outputs, s.result

    def _held_below(self, outputs):
        """Weakrefs to the caller's outputs of the call before, if they are live now and one lies
        below the graph's outputs (their room may take those outputs once they die); else None."""
        import torch

        held = [t for t in (r() for r in self._last_outputs) if t is not None]
        static = list(_tensors(outputs, torch.Tensor))
        if not held or not static or min(t.data_ptr() for t in held) >= _extent(static)[0]:
            return None
        return [weakref.ref(t) for t in held]

    def _room_freed_below(self, entry):
        if entry.held_at_capture is None:
            return False
        if any(r() is not None for r in entry.held_at_capture):
            return False
        entry.held_at_capture = None  # once: the recapture below is the only one
        return True

    def _recapture(self, entry):
        """Captures the entry's function again on its static inputs, in the capture step (which
        replays its branch at the addresses the graph holds); keeps the new graph if its outputs
        end below the old ones. Returns whether it did; a failure keeps the old graph."""
        import torch

        captured = self._captured_step(entry.static_inputs)
        if captured is None:
            return False
        graph, outputs, result = captured
        new = list(_tensors(outputs, torch.Tensor))
        old = list(_tensors(entry.static_outputs, torch.Tensor))
        same_branch = (self.capture_name, result["branch"], result["parity"]) == entry.branch
        if (not result["replayed"] or not same_branch or self._plans_epoch() != entry.plans_epoch
                or len(new) != len(old) or _extent(new)[1] >= _extent(old)[1]):
            self.stats["breaks"] += result["break_reason"] is not None
            self.stats["recaptures_dropped"] += 1
            return False
        entry.graph, entry.static_outputs = graph, outputs
        self.stats["recaptures"] += 1
        return True
