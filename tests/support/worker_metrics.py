"""The metrics' proof on a real worker, run inside the dev stack's test on each release a stack
stays on (tests/runtime/test_replication.py::test_dev_stack_replicates_on_every_release; the
bridge release runs its dev flow without it): the Prometheus JMX exporter agent attached to the
real Connect worker as the release attaches it (infra/tools/rehearsal/operator.py), scraped at
http://<pod>:9404/metrics, and the series every alert and dashboard reads asserted with their
exact labels and values. The dev flow's rehearsal is the one this proof needs (the same
clusters, topic, group and connectors), so it runs there rather than in a rehearsal of its own.

The shapes of the series the worker showed (`name{label,...}`, label names sorted, our rules'
series and the agent's `jvm_*` and `process_*`) are kept in tests/data/scrape/<flavour>-<version>.txt
and asserted equal;
`SCRAPE_REWRITE=1` rewrites them from the real scrape. Alerts and dashboards may use only the
series present in all four files.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

from infra.core.names import FlowNames
from infra.plan import metrics
from infra.tools.rehearsal import jars, operator
from infra.tools.rehearsal.run import Rehearsal
from tests.support import runbooks
from tests.support.monitoring import Series, exposition
from tests.support.portforward import forwarded
from tests.support.replication import eventually, records
from tests.support.stacks import ROOT

SCRAPES = ROOT / "tests" / "data" / "scrape"
REWRITE = os.environ.get("SCRAPE_REWRITE") == "1"
FLOW = "repl-us-west-us-east"
CONNECTORS = [f"{FLOW}-checkpoint", f"{FLOW}-heartbeat", f"{FLOW}-source"]
# The group the dev test commits offsets for on the source before deploying: the checkpoints' subject.
GROUP = "test.readers"
RULES = FlowNames(FLOW, "us-west", "us-east").metrics_configmap
SHAPED = ("kafka_", "jvm_", "process_")  # the agent's JVM metrics (JvmMetrics) beside our rules'


def shapes(series: Series) -> list[str]:
    """One line per series shape: `name{label,...}` (names sorted): our rules' series and the
    agent's JVM and process ones."""
    return sorted({f"{name}{{{','.join(sorted(k for k, _ in labels))}}}" for name, labels in series
                   if name.startswith(SHAPED)})


def find(series: Series, name: str, **labels: str) -> dict[frozenset[tuple[str, str]], float]:
    """The series of `name` whose labels include `labels`."""
    wanted = set(labels.items())
    return {ls: v for (n, ls), v in series.items() if n == name and wanted <= ls}


def with_metrics(monkeypatch: pytest.MonkeyPatch, r: Rehearsal) -> None:
    """The stand-in operator reads the ConfigMap a KafkaConnect's metricsConfig names from the
    objects the rehearsal created, and attaches the release's exporter agent."""
    original = operator.worker

    def worker(release, connect, secrets, host, configmaps=None, agent=None):
        namespace = connect["metadata"]["namespace"]
        found = {o["metadata"]["name"]: o.get("data", {}) for o in r.objects
                 if o["kind"] == "ConfigMap" and o["metadata"].get("namespace") == namespace}
        return original(release, connect, secrets, host, found, str(jars.jmx_exporter_agent(release)))
    monkeypatch.setattr(operator, "worker", worker)


def attach_exporter(monkeypatch: pytest.MonkeyPatch, r: Rehearsal, flavour: str, version: str) -> None:
    """Before `deploy`: the release's exporter agent, checked to be its image's, attached to the
    workers the rehearsal starts (`with_metrics`)."""
    try:
        agent = jars.jmx_exporter_agent(r.release)
    except jars.JarsError as exc:
        pytest.fail(str(exc))
    # The image's exporter (tools/jmx-exporter/pom.xml): the published 1.0.1 agent on CSM,
    # the published rule engine of 1.4.0 (1.5.0's, alike for agents) and 1.6.0 under our
    # launcher on Strimzi 0.48.0 and 1.2.0.
    engine = {"csm-1.2": "jmx_prometheus_javaagent-1.0.1.jar", "csm-1.4": "jmx_prometheus_javaagent-1.0.1.jar",
              "strimzi-0.48.0": "collector-1.5.0.jar", "strimzi-1.2.0": "collector-1.6.0.jar"}
    if flavour == "csm":
        assert agent.name == engine[f"{flavour}-{version}"]
    else:
        assert agent.name == "ExporterAgent.jar"
        assert [j.name for j in (agent.parent / "lib").glob("collector-*.jar")] == [engine[f"{flavour}-{version}"]]
    with_metrics(monkeypatch, r)


def prove_worker_metrics(r: Rehearsal, flavour: str, version: str, tmp_path: Path) -> None:
    """Once the dev flow runs with its records copied and its group's offsets translated: the
    worker's scrape holds every series the rules, alerts and dashboard read, with their exact
    labels and values, and the shapes of tests/data/scrape/<release>.txt."""
    (connect,) = [o for o in r.objects if o["kind"] == "KafkaConnect"]
    assert connect["spec"]["metricsConfig"] == {
        "type": "jmxPrometheusExporter",
        "valueFrom": {"configMapKeyRef": {"name": RULES, "key": "metrics-config.yml"}}}
    source = r.client("us-west")
    (worker,) = r.workers.values()
    static = {metrics.FLOW_LABEL: FLOW, metrics.CONNECT_LABEL: FLOW}
    mirror = {"source": "us-west", "target": "us-east", **static}

    def scrape() -> Series:
        text = worker.scrape()
        (tmp_path / "scrape.txt").write_text(text)  # the last scrape, for a failure's reader
        return exposition(text)

    def counts(series: Series) -> list[float]:
        found = [find(series, "kafka_connect_mirror_mirrorsourceconnector_record_count",
                      topic="us-west.test.orders", partition=str(p), **mirror) for p in (0, 1)]
        return [sum(f.values()) if len(f) == 1 else -1 for f in found]

    # The source connector restarts its tasks when it finds the heartbeats topic the heartbeat
    # connector creates, and a task's counts start again at 0: wait for that task set.
    eventually("the replicated heartbeats in the scrape", lambda: find(
        scrape(), "kafka_connect_mirror_mirrorsourceconnector_record_count", topic="us-west.heartbeats",
        **mirror), 120, 3)
    def both() -> list[float] | None:
        found = counts(scrape())
        return found if min(found) >= 0 else None
    before = eventually("both partitions in the scrape", both, 60, 2)
    r.clients.produce(source, "test.orders", records(4, "more"))

    def scraped() -> Series | None:
        series = scrape()
        checkpoints = find(series, "kafka_connect_mirror_mirrorcheckpointconnector_checkpoint_latency_ms",
                           group=GROUP, **mirror)
        lag = find(series, "kafka_consumer_fetch_manager_records_lag", topic="test_orders", **static)
        done = (len(checkpoints) == 2 and counts(series) == [before[0] + 2, before[1] + 2] and len(lag) == 2
                and all(v == 0 for v in lag.values()))
        return series if done else None

    # Two more records per partition counted, checkpoints of the group, the lag caught up.
    series = eventually("checkpoints, the new records and the consumer lag in the scrape", scraped, 180, 3)
    if f"{flavour}-{version}" == "csm-1.2":  # the dev stack's release, which the runbook names
        # docs/operations.md, "Checking the endpoint": its curl line as written, on the port
        # the port-forward before it opens (tests/support/portforward.py stands in for that:
        # no kubelet here). It prints MirrorMaker 2's series, every one the scrape has.
        line = runbooks.line("Checking the endpoint", "curl ")
        with forwarded(metrics.METRICS_PORT, worker.host, metrics.METRICS_PORT):
            done = subprocess.run(["bash", "-o", "pipefail", "-c", line], capture_output=True, text=True,
                                  timeout=60)
        assert done.returncode == 0, (line, done.stderr)
        assert all(x.startswith("kafka_connect_mirror_") for x in done.stdout.splitlines()), done.stdout
        assert shapes(exposition(done.stdout)) == [s for s in shapes(series) if s.startswith("kafka_connect_mirror_")]

    # Every connector and task: status running, value 1, and no other status.
    for name in CONNECTORS:
        assert find(series, "kafka_connect_connector_status", connector=name, **static) == {
            frozenset({"connector": name, "status": "running", **static}.items()): 1.0}
        # The tasks the worker runs now (the checkpoint connector has none until it finds groups).
        tasks = worker.status(name)["tasks"]
        assert tasks and {t["state"] for t in tasks} == {"RUNNING"}
        assert find(series, "kafka_connect_connector_task_status", connector=name, **static) == {
            frozenset({"connector": name, "task": str(t["id"]), "status": "running", **static}.items()): 1.0
            for t in tasks}
    # The replicated topic's partitions, with source, target, the remote topic and partition.
    for attribute in metrics.MIRROR_SOURCE_ATTRIBUTES:
        name = "kafka_connect_mirror_mirrorsourceconnector_" + attribute.replace("-", "_")
        assert set(find(series, name, topic="us-west.test.orders", **mirror)) == {
            frozenset({**mirror, "topic": "us-west.test.orders", "partition": str(p)}.items()) for p in (0, 1)}
    # Checkpoints of the group, per partition of the REMOTE topic (the checkpoint's own).
    for attribute in metrics.MIRROR_CHECKPOINT_ATTRIBUTES:
        name = "kafka_connect_mirror_mirrorcheckpointconnector_" + attribute.replace("-", "_")
        assert set(find(series, name, group=GROUP)) == {
            frozenset({**mirror, "group": GROUP, "topic": "us-west.test.orders", "partition": str(p)}.items())
            for p in (0, 1)}
    # The replication consumer's lag per source partition, caught up: one consumer per task
    # (its id `<source>-><target>|<connector>-<task>|replication-consumer`), and the topic as
    # Kafka's consumer tags it, '.' as '_' (FetchMetricsManager.topicPartitionTags).
    task_ids = re.compile(re.escape(f"us-west->us-east|{FLOW}-source-") + r"[0-9]+\|replication-consumer")
    for attribute in metrics.CONSUMER_LAG_ATTRIBUTES:
        name = "kafka_consumer_fetch_manager_" + attribute.replace("-", "_")
        lag = find(series, name, topic="test_orders")
        assert sorted(dict(ls)["partition"] for ls in lag) == ["0", "1"]
        assert all(task_ids.fullmatch(dict(ls)["client_id"]) for ls in lag), lag
        assert set(lag.values()) == {0.0}
        assert all(set(dict(ls)) == {"client_id", "topic", "partition", *static} for ls in lag)
    # The worker and its tasks.
    assert find(series, "kafka_connect_worker_connector_count", **static) == {frozenset(static.items()): 3.0}
    assert find(series, "kafka_connect_source_task_source_record_write_total", connector=f"{FLOW}-source")
    assert find(series, "kafka_connect_connector_task_offset_commit_avg_time_ms", connector=f"{FLOW}-source")
    # The source tasks' producers (what the target does to their writes): sends counted, no
    # error, no throttling; the group's rebalances as this worker saw them; the tasks' errors.
    producers = {dict(ls)["task"]: v for ls, v in find(series, "kafka_producer_record_send_total",
                                                        connector=f"{FLOW}-source", **static).items()}
    assert sorted(producers) == sorted(str(t["id"]) for t in worker.status(f"{FLOW}-source")["tasks"])
    assert sum(producers.values()) >= 4
    assert set(find(series, "kafka_producer_record_error_total", connector=f"{FLOW}-source").values()) == {0.0}
    throttle = find(series, "kafka_producer_produce_throttle_time_max", connector=f"{FLOW}-source").values()
    assert throttle and all(v == 0 or v != v for v in throttle)  # 0, or NaN before any response
    (rebalances,) = find(series, "kafka_connect_worker_rebalance_completed_rebalances_total", **static).values()
    assert rebalances >= 1
    assert set(find(series, "kafka_connect_task_error_total_record_failures",
                    connector=f"{FLOW}-source").values()) == {0.0}
    # Every series of ours carries the flow and the Connect cluster.
    assert all(static.items() <= ls for (n, ls) in series if n.startswith("kafka_"))

    observed = shapes(series)
    path = SCRAPES / f"{flavour}-{version}.txt"
    if REWRITE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(f"{line}\n" for line in observed))
    assert observed == Path(path).read_text().splitlines(), f"{path}: rewrite with SCRAPE_REWRITE=1"
