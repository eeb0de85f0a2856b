"""A stand-in for the few torch calls memplan.graphs makes (streams, tensors whose memory comes from
the host library, a graph that records closures and replays them), so GraphedStep's policy runs
over the real compiler without a GPU; plus_one, a step body to graph; and loop, the caller's loop
around a GraphedStep."""

import contextlib
import types
import weakref

KiB = 1 << 10


class FakeTorch:
    """The torch calls GraphedStep makes, over memplan_torch_alloc/free on one device."""

    def __init__(self, lib, device):
        self.lib, self.device = lib, device
        self.capturing = None  # the FakeGraph being captured
        self.streams_made = 0
        self.warm_ups = []  # the streams memplan.torch.warm_up was called for (None: current)
        self.graphs_registered, self.generator_state = 0, None
        # Device memory, as far as a test can see it: a tensor's value lives at its address, so
        # two live tensors given the same address, or a graph writing memory handed out again,
        # show as wrong values. live: every live tensor, for overlap checks.
        self.memory, self.live = {}, weakref.WeakSet()
        fake = self

        class Tensor:
            def __init__(self, size, value):
                self.size, self.nbytes = size, size
                self.ptr = fake.lib.memplan_torch_alloc(size, fake.device, None)
                self.shape, self.dtype, self.device = (size,), "bf16", f"cuda:{fake.device}"
                self.value = value
                fake.live.add(self)

            @property
            def value(self):
                return fake.memory.get(self.ptr)

            @value.setter
            def value(self, v):
                fake.memory[self.ptr] = v

            def data_ptr(self):
                return self.ptr

            def stride(self):
                return (1,)

            def clone(self):
                return Tensor(self.size, self.value)

            def copy_(self, other):
                fake.run(lambda: setattr(self, "value", other.value))
                return self

            def __del__(self):
                fake.lib.memplan_torch_free(self.ptr, self.size, fake.device, None)

        class Stream:
            def __init__(self, device=None):
                fake.streams_made += 1

            def wait_stream(self, other):
                pass

        class Graph:
            def __init__(self):
                self.work = []
                self.registered = False

            def replay(self):
                for w in self.work:
                    w()

            def __del__(self):
                if self.registered:
                    fake.graphs_registered -= 1
                    if fake.graphs_registered == 0:
                        fake.generator_state = None

        @contextlib.contextmanager
        def graph(g, stream=None, capture_error_mode="global"):
            # As PyTorch's capture_begin registers the graph with the CUDA generator: the RNG's
            # seed and offset (8 B each) are allocated when the first live graph registers and
            # freed when the last one goes.
            if fake.graphs_registered == 0:
                fake.generator_state = Tensor(8, 0)
            fake.graphs_registered += 1
            g.registered = True
            fake.capturing = g
            try:
                yield
            finally:
                fake.capturing = None

        self.Tensor = Tensor
        self.module = types.SimpleNamespace(
            Tensor=Tensor,
            cuda=types.SimpleNamespace(
                Stream=Stream, current_stream=lambda device=None: Stream(),
                stream=lambda s: contextlib.nullcontext(), CUDAGraph=Graph, graph=graph))

    def run(self, work):
        """A kernel: runs now, or is recorded into the graph being captured."""
        if self.capturing is not None:
            self.capturing.work.append(work)
        else:
            work()


def plus_one(fake, sizes=(64 * KiB, 16 * KiB)):
    """A step body: scratch buffers, and an output of x's size holding x + 1."""
    def fn(x):
        scratch = [fake.Tensor(s, None) for s in sizes]
        out = fake.Tensor(x.size, None)
        fake.run(lambda: setattr(out, "value", x.value + 1))
        del scratch
        return out
    return fn


def loop(g, x, calls, keep=None):
    """`out = g(x)` `calls` times, with x.value = 10 * i before call i (the old output lives until
    the call returns, as in a loop; with `keep`, a list, every output is kept there); returns each
    call's (path, output address, value)."""
    seen, out = [], None
    for i in range(calls):
        x.value = 10 * i
        out = g(x)
        seen.append((g.last_path, out.data_ptr(), out.value))
        if keep is not None:
            keep.append(out)
    return seen


def overlapping(fake):
    """Pairs of live tensors whose bytes overlap (none, if memplan hands out memory right)."""
    spans = sorted((t.ptr, t.ptr + t.nbytes, id(t)) for t in list(fake.live))
    return [(a, b) for a, b in zip(spans, spans[1:]) if b[0] < a[1]]
