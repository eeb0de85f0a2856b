"""GraphedStep under random programs (fake_torch over the real compiler, no GPU): two keys,
outputs kept for random lengths of time (none, the last, the last two, a growing list), blockers
allocated in pauses and freed later, trims, graphs.trim, release, capture toggled off and on, a
key whose function allocates differently now and then. After every call: its result is the input
plus one, read from the fake's memory (a graph launched over memory handed out again, or two live
tensors at one address, would show), and no two live tensors overlap. One device for all seeds
(a process has 64), each seed a step name of its own; seeds from MEMPLAN_GRAPHS_SEEDS (default
24, from MEMPLAN_GRAPHS_FIRST_SEED, default 0) and calls per seed from MEMPLAN_GRAPHS_CALLS
(default 80)."""

import os
import random

import memplan
import memplan.graphs
from fake_torch import overlapping

KiB, MiB = 1 << 10, 1 << 20
FIRST_SEED = int(os.environ.get("MEMPLAN_GRAPHS_FIRST_SEED", "0"))
SEEDS = int(os.environ.get("MEMPLAN_GRAPHS_SEEDS", "24"))
CALLS = int(os.environ.get("MEMPLAN_GRAPHS_CALLS", "80"))


def test_random_programs_compute_right_and_never_alias(fake, device):
    totals = {}
    for seed in range(FIRST_SEED, FIRST_SEED + SEEDS):
        for k, v in run_program(fake, device, seed).items():
            totals[k] = totals.get(k, 0) + v
        memplan.trim(device)  # the room of this seed's learned sites goes
    print(totals)
    # The programs reach what the test is for: launches, recaptures kept and dropped.
    assert totals["graph_launches"] > 0 and totals["recaptures"] > 0
    assert totals["recaptures_dropped"] > 0 and totals["invalidations"] > 0


def run_program(fake, device, seed):
    rng = random.Random(seed)
    odd_rate = rng.choice([0.0, 0.0, 0.05])  # some programs allocate differently at times

    def body(x):
        scratch = [fake.Tensor(s, None) for s in (64 * KiB, x.size // 2)]
        if rng.random() < odd_rate:
            scratch.append(fake.Tensor(96 * KiB, None))
        out = fake.Tensor(x.size, None)
        fake.run(lambda: setattr(out, "value", x.value + 1))
        del scratch
        return out

    g = memplan.graphs.GraphedStep(f"random{seed}", body, capture_after=rng.choice([1, 2]),
                                   device=device, compact=rng.random() < 0.8)
    inputs = [fake.Tensor(1 * MiB, 0), fake.Tensor(3 * MiB, 0)]
    keep_policy = rng.choice(["none", "last", "two", "list"])
    kept, blockers, paths = [], [], []
    for call in range(CALLS):
        x = inputs[0] if rng.random() < 0.7 else inputs[1]
        x.value = rng.randrange(1_000_000)
        out = g(x)
        paths.append(g.last_path)
        assert out.value == x.value + 1, (seed, call, paths[-6:], g.stats)
        if keep_policy == "last":
            kept = [out]
        elif keep_policy == "two":
            kept = (kept + [out])[-2:]
        elif keep_policy == "list":
            kept.append(out)
            if rng.random() < 0.1:
                kept.clear()
        del out
        # What the program keeps holds what its call returned, or what a later launch wrote
        # there (graph outputs are static); never a freed tensor's stale bytes.
        assert all(t.value is not None for t in kept)
        r = rng.random()
        if r < 0.08:
            with memplan.pause(device):
                blockers.append(fake.Tensor(rng.choice([1, 3]) * MiB, -1))
        elif r < 0.14 and blockers:
            blockers.pop(rng.randrange(len(blockers)))
        elif r < 0.18:
            memplan.graphs.trim(device)
        elif r < 0.20:
            memplan.trim(device)
        elif r < 0.22:
            g.enabled = not g.enabled
        elif r < 0.23:
            kept.clear()
            memplan.release(device)
        assert all(b.value == -1 for b in blockers), (seed, call)  # nothing wrote over them
        assert not overlapping(fake), (seed, call, overlapping(fake)[:2])
    s = g.stats
    assert s["recaptures"] + s["recaptures_dropped"] <= s["captures"]
    assert s["graph_launches"] + s["eager_steps"] >= CALLS - s["captures"]
    memplan.check_callbacks()
    return s
