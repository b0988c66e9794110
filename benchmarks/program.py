"""Scale benchmark: the whole Pulumi program under the mock engine, against the bare cost of
registering as many plain resources with the same engine, measured in the same run.

    .venv/bin/python benchmarks/program.py [--sizes 10 100 500] [--repeat 1]
    .venv/bin/python benchmarks/program.py --phases [--sizes ...] [--repeat 3]

`--phases` prints instead the CPU seconds of the program's own work before it registers anything:
the topology's validation (its guardrails included), the plan, and the policy rules on every
planned object, each round in a fresh interpreter, each phase's median round.

For each size a topology mixing every pattern is generated (plain flows, several source
connectors, flows split over two Connect clusters with quotas, bidirectional pairs with SMT
chains), then, each in a fresh interpreter so that peak memory is its own:
  program  - program.main(): load + guardrails + plan + components + outputs, as `pulumi up` runs
             it, with the engine mocked (recording every resource's inputs)
  bare     - the same number of kubernetes ConfigMaps registered directly, same engine, same harness
  objects  - the program's own Kubernetes objects (same inputs) registered flat, without the program
             (no topology, guardrails, plan, components or outputs), padded with tiny ConfigMaps to
             the same resource count: the engine's inherent cost for these objects
  objects+gc - the same, with the collector set as the program sets it (infra/core/collector.py):
             a flat program given the same help, so that `cpu ratio` is not read as the program's
             own work alone
It prints time and peak RSS per run, per flow and per resource, and the ratios program / bare
and program / objects in elapsed time, and the last again in CPU time (`cpu ratio`, steadier on
a shared machine): what the program costs against registering its objects in a plain program.
`cpu +gc` is program / objects+gc in CPU time: what the program itself adds on the same collector.
Figures are recorded in docs/performance.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PEM_SASL = {"protocol": "SASL_SSL", "sasl": {"mechanism": "SCRAM-SHA-512", "username": "mm2"}, "tls": {"trust": "pem"}}


def topology(flows: int) -> dict:
    """`flows` deployed flows over enough clusters that every (source, target) pair is used once."""
    k = math.ceil(math.sqrt(flows)) + 2
    aliases = [f"k{i:03d}" for i in range(k)]
    clusters = {a: {"bootstrapServers": f"{a}-kafka-bootstrap.kafka:9093", "security": PEM_SASL} for a in aliases}
    pairs = [(s, t) for s in aliases for t in aliases if s != t]
    used: set[tuple[str, str]] = set()
    declared, deployed, i = [], 0, 0
    for source, target in pairs:
        if deployed >= flows:
            break
        if (source, target) in used:
            continue
        i += 1
        flow: dict = {"source": source, "target": target}
        if i % 10 == 0 and (target, source) not in used and deployed + 2 <= flows:
            flow.update(bidirectional=True, topics=[f"shared{i}\\..*"], transforms=[
                {"name": "Tag", "type": "org.apache.kafka.connect.transforms.InsertHeader",
                 "config": {"header": "bench", "value.literal": "x"}}])
            used |= {(source, target), (target, source)}
            deployed += 2
        elif i % 10 in (3, 6):
            flow["sources"] = [{"name": "orders", "topics": [f"t{i}\\.orders\\..*"], "tasksMax": 6},
                               {"name": "events", "topics": [f"t{i}\\.events\\..*"], "transforms": [
                                   {"name": "Mark", "type": "org.apache.kafka.connect.transforms.InsertHeader",
                                    "config": {"header": "h", "value.literal": "v"}}]}]
            used.add((source, target))
            deployed += 1
        elif i % 10 == 8:
            resources = {"requests": {"cpu": "1", "memory": "2Gi"}, "limits": {"cpu": "2", "memory": "2Gi"}}
            flow["connectClusters"] = [
                {"name": "small", "topics": [f"t{i}\\.low\\..*"], "connect": {"replicas": 2, "resources": resources},
                 "resourceQuota": {"hard": {"requests.cpu": "4", "limits.memory": "8Gi"}}},
                {"name": "high", "topics": [f"t{i}\\.high\\..*"], "connect": {"replicas": 4, "resources": resources}}]
            used.add((source, target))
            deployed += 1
        else:
            flow["topics"] = [f"t{i}\\..*"]
            used.add((source, target))
            deployed += 1
        declared.append(flow)
    return {"operator": {"flavour": "csm"}, "clusters": clusters, "flows": declared}


# ------------------------------------------------------------------ one measurement (child process)


def measure_program(path: str) -> dict:
    """`program.main()` as `pulumi up` runs it: load, validate, plan, components, outputs."""
    import pulumi
    from pulumi.runtime.stack import run_pulumi_func
    from pulumi.runtime.sync_await import _sync_await

    from components import program
    from infra.checks import validation
    from infra.core import collector
    from infra.plan.stack import plan
    from infra.tools.render import PROJECT, RecordingMocks, Render, placeholder

    keys = plan(validation.load(path)).secret_keys()  # the stack's secret config, set before the run
    mocks = RecordingMocks()
    pulumi.runtime.set_mocks(mocks, project=PROJECT, stack="bench", preview=False)
    pulumi.runtime.set_all_config({f"{PROJECT}:topology": path, **{f"{PROJECT}:{k}": placeholder(k) for k in keys}},
                                  secret_keys=[f"{PROJECT}:{k}" for k in keys])
    outputs: dict = {}
    start, cpu = time.perf_counter(), time.process_time()

    async def exported(exports: dict) -> None:
        # As `pulumi up` registers the stack's outputs: each export's value, not a deep copy of
        # it into nested Outputs.
        values = await asyncio.gather(*(v.future() for v in exports.values()))
        outputs.update(zip(exports, values))

    with collector.program_run():  # as `pulumi up` runs it (__main__.py)
        _sync_await(run_pulumi_func(lambda: exported(program.main())))
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    objects = Render("bench", mocks.resources, outputs, [], []).objects()
    Path(path + ".objects.json").write_text(json.dumps(objects))
    return {"seconds": seconds, "cpu": cpu, "resources": len(mocks.resources), "flows": len(outputs["flows"])}


def measure_phases(path: str) -> dict:
    """The program's own work before it registers anything, phase by phase, in CPU seconds: the
    topology's validation (its guardrails included), the plan, and the policy rules run on every
    planned object (infra/checks/plans.py)."""
    from infra.checks import plans, validation
    from infra.core import collector, reading
    from infra.plan.audit import plan_audits
    from infra.plan.stack import plan

    document = reading.load_yaml(Path(path).read_text(), path)
    out = {}
    with collector.program_run():
        cpu = time.process_time()
        model = validation.parse(document, path)
        out["validate"], cpu = time.process_time() - cpu, time.process_time()
        stack_plan = plan(model)
        audits = plan_audits(model, stack_plan)
        out["plan"], cpu = time.process_time() - cpu, time.process_time()
        plans.problems(model, stack_plan, audits)
        out["policy"] = time.process_time() - cpu
    return out


def measure_bare(count: int, objects_file: str | None = None, collector_set: bool = False) -> dict:
    import contextlib

    import pulumi
    import pulumi_kubernetes as k8s
    from pulumi.runtime.stack import run_pulumi_func
    from pulumi.runtime.sync_await import _sync_await

    from components.kube import create
    from infra.core import collector
    from infra.tools.render import PROJECT, RecordingMocks

    objects = json.loads(Path(objects_file).read_text()) if objects_file else []
    mocks = RecordingMocks()
    pulumi.runtime.set_mocks(mocks, project=PROJECT, stack="bench", preview=False)
    start, cpu = time.perf_counter(), time.process_time()

    def body():
        for manifest in objects:
            create(manifest, pulumi.ResourceOptions(), lambda value: value)
        for i in range(count - len(objects)):
            k8s.core.v1.ConfigMap(f"ns/cm-{i}", metadata={"name": f"cm-{i}", "namespace": "ns"}, data={"k": "v"})

    with collector.program_run() if collector_set else contextlib.nullcontext():
        _sync_await(run_pulumi_func(body))
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    return {"seconds": seconds, "cpu": cpu, "resources": len(mocks.resources)}


def child(mode: str, arg: str) -> None:
    if mode == "program":
        result = measure_program(arg)
    elif mode == "phases":
        result = measure_phases(arg)
    else:
        count, _, objects_file = arg.partition(":")
        result = measure_bare(int(count), objects_file if mode.startswith("objects") else None, mode == "objects+gc")
    result["peak_rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(result))


def run_child(mode: str, arg: str) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", mode, arg], capture_output=True, text=True, cwd=ROOT)
    if out.returncode != 0:
        # A generated topology the program refuses says why (the end of the report), not only
        # that the child failed.
        raise SystemExit(f"the {mode} run failed:\n" + "\n".join(out.stderr.strip().splitlines()[-8:]))
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 100, 500])
    parser.add_argument("--repeat", type=int, default=1,
                        help="rounds per size (program, bare, objects, objects+gc in turn); each one's median round is kept")
    parser.add_argument("--phases", action="store_true",
                        help="instead: the program's own phases before it registers anything (validate, plan, "
                             "policy rules), CPU seconds, each phase's median round")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    if args.phases:
        phases(args.sizes, args.repeat)
        return
    header = (f"{'flows':>6} {'resources':>9} | {'program s':>9} {'bare s':>7} {'ratio':>6} {'objects s':>9} "
              f"{'ratio':>6} | {'ms/flow':>8} {'ms/res':>7} {'bare ms/res':>11} | {'peak MiB':>8} {'bare MiB':>8} "
              f"{'obj MiB':>8} | {'cpu ratio':>9} {'cpu +gc':>7}")
    print(header)
    print("-" * len(header))
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for size in args.sizes:
            path = Path(tmp) / f"bench-{size}.yaml"
            path.write_text(yaml.safe_dump(topology(size), sort_keys=False))
            # Rounds interleave the four, so that a busy spell on a shared machine falls on each.
            runs: dict[str, list[dict]] = {"program": [], "bare": [], "objects": [], "objects+gc": []}
            for _ in range(args.repeat):
                runs["program"].append(run_child("program", str(path)))
                count = runs["program"][-1]["resources"]
                runs["bare"].append(run_child("bare", str(count)))
                runs["objects"].append(run_child("objects", f"{count}:{path}.objects.json"))
                runs["objects+gc"].append(run_child("objects+gc", f"{count}:{path}.objects.json"))
            # The median round of each (the lower of two), not the fastest: a figure as it is measured.
            program, bare, objects = (sorted(runs[m], key=lambda r: r["seconds"])[(len(runs[m]) - 1) // 2]
                                      for m in ("program", "bare", "objects"))
            assert bare["resources"] == objects["resources"] == program["resources"]
            ratio = program["seconds"] / bare["seconds"]
            ratio_objects = program["seconds"] / objects["seconds"]
            cpu_objects = statistics.median_low(r["cpu"] for r in runs["program"]) / \
                statistics.median_low(r["cpu"] for r in runs["objects"])
            cpu_same_gc = statistics.median_low(r["cpu"] for r in runs["program"]) / \
                statistics.median_low(r["cpu"] for r in runs["objects+gc"])
            rows.append({"flows": program["flows"], "program": program, "bare": bare, "ratio": ratio})
            print(f"{program['flows']:>6} {program['resources']:>9} | {program['seconds']:>9.2f} "
                  f"{bare['seconds']:>7.2f} {ratio:>6.2f} {objects['seconds']:>9.2f} {ratio_objects:>6.2f} | "
                  f"{1000 * program['seconds'] / program['flows']:>8.1f} "
                  f"{1000 * program['seconds'] / program['resources']:>7.2f} "
                  f"{1000 * bare['seconds'] / bare['resources']:>11.2f} | {program['peak_rss_mib']:>8.0f} "
                  f"{bare['peak_rss_mib']:>8.0f} {objects['peak_rss_mib']:>8.0f} | {cpu_objects:>9.2f} {cpu_same_gc:>7.2f}", flush=True)
    if len(rows) > 1:
        first, last = rows[0], rows[-1]
        growth = (last["program"]["seconds"] / last["flows"]) / (first["program"]["seconds"] / first["flows"])
        print(f"\nper-flow cost at {last['flows']} flows / at {first['flows']} flows: {growth:.2f} (1.00 = linear)")


def phases(sizes: list[int], repeat: int) -> None:
    names = ("validate", "plan", "policy")
    print(f"{'flows':>6} | " + " ".join(f"{n + ' s':>10}" for n in names))
    with tempfile.TemporaryDirectory() as tmp:
        for size in sizes:
            path = Path(tmp) / f"bench-{size}.yaml"
            path.write_text(yaml.safe_dump(topology(size), sort_keys=False))
            runs = [run_child("phases", str(path)) for _ in range(repeat)]  # each in a fresh interpreter
            print(f"{size:>6} | " + " ".join(f"{statistics.median_low(r[n] for r in runs):>10.2f}" for n in names),
                  flush=True)


if __name__ == "__main__":
    main()
