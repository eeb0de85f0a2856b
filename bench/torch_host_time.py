"""Where an eager model's host time goes under memplan: the same model and input under several
ways of calling it, one process each (pinned to one CPU core when asked), rounds in alternating
order, and a torch.profiler table of five steps per way in the first round.

Ways (--ways):
  caching-direct       PyTorch's caching allocator, model(x) on the current stream
  caching-side         the same on a side stream with GraphedStep's two stream waits
  memplan-direct       memplan installed, model(x) inside `with memplan.step(...)`
  memplan-graphedstep  memplan.graphs.GraphedStep(enabled=False): the eager row of
                       bench/torch_allocators.py (since 2026-12-02 the step alone, on the
                       current stream; before, on GraphedStep's side stream with its key)
  memplan-pause        memplan installed, model(x) inside memplan.pause() (the persistent pool)

    MEMPLAN_LIBRARY=build/gpu/src/c/libmemplan_torch.so python3 bench/torch_host_time.py \
        --out host-time --rounds 3 --pin 4

Per way and round: the median host time (the call alone) and step time (call and synchronize)
over --steps steps after 10 warm-up steps; JSON in --out/host_time.json, profiles in
--out/profile-<way>.txt. --model picks the workload, as bench/torch_allocators.py builds it:
resnet50 (examples/python/resnet50.py, batch 64, the default), vit or llama
(examples/python/hf_models.py).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WAYS = ("caching-direct", "caching-side", "memplan-direct", "memplan-graphedstep",
        "memplan-pause")
WARMUP = 10


def _build(model):
    """(the function a step calls, its inputs) for --model."""
    sys.path.insert(0, os.path.join(REPO, "examples", "python"))
    if model == "resnet50":
        import resnet50

        net, inputs = resnet50.build_resnet50()
        return net, inputs
    import hf_models

    net, inputs = hf_models.BUILDERS[model]()
    return hf_models.forward_fn(model, net), inputs


def _caller(way, net, name):
    import torch

    sys.path.insert(0, os.path.join(REPO, "python"))
    import memplan

    side = torch.cuda.Stream()
    graphed = None
    if way == "memplan-graphedstep":
        graphed = memplan.graphs.GraphedStep(name, net, capture_after=2, enabled=False)

    def side_stream(x):
        current = torch.cuda.current_stream()
        side.wait_stream(current)
        with torch.cuda.stream(side):
            out = net(x)
        current.wait_stream(side)
        return out

    def in_step(x):
        with memplan.step(name):
            return net(x)

    def in_pause(x):
        with memplan.pause():
            return net(x)

    return {"caching-direct": net, "caching-side": side_stream, "memplan-direct": in_step,
            "memplan-graphedstep": graphed, "memplan-pause": in_pause}[way]


def worker(way, model, steps, profile):
    import torch

    sys.path.insert(0, os.path.join(REPO, "python"))
    import memplan

    if way.startswith("memplan"):
        memplan.torch.install()
    torch.cuda.init()
    net, inputs = _build(model)
    call = _caller(way, net, model)
    host, wall = [], []
    with torch.no_grad():
        for i in range(WARMUP + steps):
            torch.cuda.synchronize()
            start = time.perf_counter()
            out = call(*inputs)
            called = time.perf_counter()
            torch.cuda.synchronize()
            done = time.perf_counter()
            del out
            if i >= WARMUP:
                host.append(1e3 * (called - start))
                wall.append(1e3 * (done - start))
        host.sort()
        result = {"way": way, "median_host_ms": statistics.median(host),
                  "median_step_ms": statistics.median(wall), "host_p10_ms": host[len(host) // 10],
                  "host_p90_ms": host[9 * len(host) // 10]}
        if way.startswith("memplan"):
            stats = memplan.stats()
            result.update({k: stats[k] for k in ("steps_replayed", "steps_recorded", "breaks")})
        if profile:
            from torch.profiler import ProfilerActivity
            from torch.profiler import profile as torch_profile

            with torch_profile(activities=[ProfilerActivity.CPU]) as p:
                for _ in range(5):
                    out = call(*inputs)
                    torch.cuda.synchronize()
                    del out
            result["profile"] = p.key_averages().table(sort_by="self_cpu_time_total",
                                                       row_limit=25)
    print("RESULT " + json.dumps(result))


def driver(args):
    os.makedirs(args.out, exist_ok=True)
    results = []
    for r in range(args.rounds):
        order = args.ways if r % 2 == 0 else args.ways[::-1]
        for way in order:
            cmd = [sys.executable, os.path.abspath(__file__), "--worker", way,
                   "--model", args.model, "--steps", str(args.steps)] + (
                       ["--profile"] if r == 0 else [])
            if args.pin is not None:
                cmd = ["taskset", "-c", str(args.pin)] + cmd
            p = subprocess.run(cmd, capture_output=True, text=True)
            lines = [line for line in p.stdout.splitlines() if line.startswith("RESULT ")]
            if p.returncode != 0 or not lines:
                print(f"round {r} {way}: failed (exit {p.returncode})\n{p.stderr[-3000:]}")
                continue
            result = json.loads(lines[0][len("RESULT "):])
            result["round"] = r
            if "profile" in result:
                with open(os.path.join(args.out, f"profile-{way}.txt"), "w") as f:
                    f.write(result.pop("profile"))
            results.append(result)
            print(f"round {r} {way:20s} host {result['median_host_ms']:.2f} ms (p10 "
                  f"{result['host_p10_ms']:.2f}, p90 {result['host_p90_ms']:.2f}), step "
                  f"{result['median_step_ms']:.2f} ms", flush=True)
    with open(os.path.join(args.out, "host_time.json"), "w") as f:
        json.dump({"model": args.model, "pin": args.pin, "steps": args.steps, "runs": results},
                  f, indent=1)
    for way in args.ways:
        steps = [r["median_step_ms"] for r in results if r["way"] == way]
        if steps:
            print(f"{way:20s} step over rounds: median {statistics.median(steps):.2f} ms "
                  f"({' / '.join(f'{s:.2f}' for s in steps)})")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ways", nargs="+", default=list(WAYS), choices=WAYS)
    parser.add_argument("--model", default="resnet50", choices=("resnet50", "vit", "llama"))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=150)
    parser.add_argument("--pin", type=int, help="run each process on this CPU core (taskset)")
    parser.add_argument("--out", default="host-time")
    parser.add_argument("--worker", choices=WAYS, help=argparse.SUPPRESS)
    parser.add_argument("--profile", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.model, args.steps, args.profile)
    else:
        driver(args)


if __name__ == "__main__":
    main()
