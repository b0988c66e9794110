"""A Connect worker's pod roots (infra/tools/rehearsal/connect.py pod_mounts): each worker runs in a
mount namespace of its own where /opt/kafka, /mnt and /tmp are its pod's folders, as a container's
are. The JDK and the rehearsal's cache stay in sight wherever they live: a cache under /tmp (a
HOME or XDG_CACHE_HOME there, as some CI containers set) is bound in at its own path, not hidden
by the pod's /tmp (which made every worker exit with "Error opening zip file" on its first jar).
Run for real with util-linux `unshare` (root, as CI runs), no JVM needed."""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest

from infra.tools.rehearsal.connect import POD_ROOTS, pod_mounts
from infra.tools.rehearsal.process import RuntimeStartError
from tests.support.stacks import unavailable


@pytest.fixture
def pod(tmp_path) -> Path:
    for root in POD_ROOTS:
        (tmp_path / "pod" / root.strip("/").replace("/", "-")).mkdir(parents=True)
    return tmp_path / "pod"


def in_pod(pod: Path, host: list[Path], command: str) -> subprocess.CompletedProcess[str]:
    if shutil.which("unshare") is None or os.geteuid() != 0:
        unavailable("a mount namespace of its own needs util-linux `unshare` and root, as the workers do")
    for root in POD_ROOTS:
        Path(root).mkdir(parents=True, exist_ok=True)
    script = f"{pod_mounts(pod, host)} && {command}"
    return subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", script], capture_output=True,
                          text=True, timeout=60)


def test_a_cache_under_tmp_stays_in_sight_and_the_pod_keeps_its_own_tmp(pod):
    cache = Path("/tmp") / f"cache-{uuid.uuid4().hex[:8]}" / "kafka-replication"
    (cache / "jars").mkdir(parents=True)
    try:
        (cache / "jars" / "kafka.jar").write_text("the jar")
        (pod / "tmp" / "hosts").write_text("the pod's hosts")
        neighbour = cache.parent / "neighbour"  # beside the cache under the host's /tmp: not the pod's
        neighbour.write_text("the host's")
        done = in_pod(pod, [cache], f"cat {cache}/jars/kafka.jar /tmp/hosts; test -e {neighbour} || echo hidden; "
                                    f"echo written > {cache}/jars/archive.jsa")
        assert (done.returncode, done.stderr) == (0, "")
        assert done.stdout == "the jarthe pod's hostshidden\n"
        # The cache is the host's own, read-write: a class archive a worker dumps is kept.
        assert (cache / "jars" / "archive.jsa").read_text() == "written\n"
    finally:
        shutil.rmtree(cache.parent)


def test_without_a_bind_the_cache_under_tmp_is_hidden(pod):
    """The check has teeth: with the cache left out of `host`, the worker sees no jar."""
    cache = Path("/tmp") / f"cache-{uuid.uuid4().hex[:8]}"
    cache.mkdir()
    try:
        (cache / "kafka.jar").write_text("the jar")
        done = in_pod(pod, [], f"cat {cache}/kafka.jar")
        assert done.returncode != 0 and "No such file or directory" in done.stderr
    finally:
        shutil.rmtree(cache)


def test_the_commands_exactly(tmp_path):
    pod = tmp_path / "pod"
    script = pod_mounts(pod, [Path("/usr/lib/jvm/java-17"), Path("/tmp/ci home/.cache/kafka-replication")])
    assert script == (f"mount --bind '/tmp/ci home/.cache/kafka-replication' '{pod}/tmp/ci home/.cache/kafka-replication'"
                      f" && mount --rbind '{pod}/opt-kafka' '/opt/kafka' && mount --rbind '{pod}/mnt' '/mnt'"
                      f" && mount --rbind '{pod}/tmp' '/tmp'")
    assert (pod / "tmp" / "ci home" / ".cache" / "kafka-replication").is_dir()  # the bind's target


@pytest.mark.parametrize("cache", ["/tmp", "{pod_parent}"])
def test_a_cache_that_is_a_pod_root_or_holds_the_pod_is_refused(tmp_path, cache):
    pod = tmp_path / "pods" / "w-0"
    folder = Path(cache.format(pod_parent=tmp_path / "pods"))
    with pytest.raises(RuntimeStartError) as refused:
        pod_mounts(pod, [folder])
    assert str(refused.value) == (
        f"{folder} (the JDK or the rehearsal's cache, KAFKA_REPLICATION_CACHE) would be hidden by or hold the Connect "
        "pods' own /opt/kafka, /mnt, /tmp: use a folder below them, or elsewhere")
