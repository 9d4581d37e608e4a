"""Cost of spanprof_context's asyncio hook per published context switch.

A task-switch-heavy asyncio loop: TASKS tasks, each inside its own SDK span, each awaiting
asyncio.sleep(0) STEPS times, so every step is a context switch that publishes the resumed
task's span (and restores on the way out). Timed without the hook, with it, and with it on tasks
that have no span (steps publish nothing: the fast path). In the same run, the SDK's own
context attach+detach pair is timed; the extra cost per switch is printed as a ratio to it.
Median of ROUNDS rounds. Never fails on the figures. Needs opentelemetry-sdk and the
spanprof_context package (pip install writer/python).
    python3 bench/spans/python_context.py [-r ROUNDS] [-t TASKS] [-s STEPS]
"""
import argparse
import asyncio
import statistics
import sys
import time

try:
    from opentelemetry import context, trace
    from opentelemetry.sdk.trace import TracerProvider
    import spanprof_context
except ImportError as e:
    sys.exit(f"python_context: {e}: pip install opentelemetry-sdk writer/python")


def switch_loop(tracer, tasks, steps, with_span):
    async def task(k):
        if with_span:
            with tracer.start_as_current_span(f"t{k}"):
                for _ in range(steps):
                    await asyncio.sleep(0)
        else:
            for _ in range(steps):
                await asyncio.sleep(0)

    async def main():
        await asyncio.gather(*(task(k) for k in range(tasks)))

    t0 = time.perf_counter()
    asyncio.run(main())
    return (time.perf_counter() - t0) / (tasks * steps) * 1e9


def attach_detach(tracer, n):
    span = tracer.start_span("timing")
    ctx = trace.set_span_in_context(span)
    t0 = time.perf_counter()
    for _ in range(n):
        context.detach(context.attach(ctx))
    return (time.perf_counter() - t0) / n * 1e9


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-r", "--rounds", type=int, default=7)
    ap.add_argument("-t", "--tasks", type=int, default=100)
    ap.add_argument("-s", "--steps", type=int, default=200)
    args = ap.parse_args()
    trace.set_tracer_provider(TracerProvider())
    tracer = trace.get_tracer("bench")
    rows = {k: [] for k in ("plain", "hooked", "hooked_nospan", "plain_nospan", "sdk_pair")}
    for _ in range(args.rounds):
        rows["sdk_pair"].append(attach_detach(tracer, 20000))
        rows["plain"].append(switch_loop(tracer, args.tasks, args.steps, True))
        rows["plain_nospan"].append(switch_loop(tracer, args.tasks, args.steps, False))
        spanprof_context.install()
        rows["hooked"].append(switch_loop(tracer, args.tasks, args.steps, True))
        rows["hooked_nospan"].append(switch_loop(tracer, args.tasks, args.steps, False))
        spanprof_context.uninstall()
    med = {k: statistics.median(v) for k, v in rows.items()}
    extra = med["hooked"] - med["plain"]
    extra_nospan = med["hooked_nospan"] - med["plain_nospan"]
    print(f"python {sys.version.split()[0]}, {args.tasks} tasks x {args.steps} steps, "
          f"median of {args.rounds} rounds ({spanprof_context.load()._name})")
    print(f"  SDK context attach+detach pair (no hook): {med['sdk_pair']:8.0f} ns")
    print(f"  task switch, span in every task:  {med['plain']:8.0f} ns plain, "
          f"{med['hooked']:8.0f} ns hooked: +{extra:.0f} ns = "
          f"{extra / med['sdk_pair']:.2f}x an SDK attach+detach, "
          f"{med['hooked'] / med['plain']:.2f}x the plain switch")
    print(f"  task switch, no span:             {med['plain_nospan']:8.0f} ns plain, "
          f"{med['hooked_nospan']:8.0f} ns hooked: +{extra_nospan:.0f} ns = "
          f"{extra_nospan / med['sdk_pair']:.2f}x an SDK attach+detach, "
          f"{med['hooked_nospan'] / med['plain_nospan']:.2f}x the plain switch")


if __name__ == "__main__":
    main()
