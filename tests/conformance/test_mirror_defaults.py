"""MirrorMaker 2's defaults the program writes out, read from each release's own connect-mirror
jar with the JDK's javap: what Kafka compiled in decides, not our copy of it."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from infra.core.releases import Flavour, find
from infra.plan.connectors import TOPIC_CONFIG_EXCLUDES, WORKER_KEYS
from infra.tools.rehearsal import jars
from tests.support.stacks import RELEASES, unavailable

FILTER = "org.apache.kafka.connect.mirror.DefaultConfigPropertyFilter"


def constant(jar: str, cls: str, name: str) -> str:
    javap = shutil.which("javap")
    if javap is None:
        unavailable("no javap (a JDK) on PATH")
    done = subprocess.run([javap, "-constants", "-cp", jar, cls], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    found = re.search(rf'String {name} = "(.*)";', done.stdout)
    assert found, done.stdout
    return found.group(1).encode().decode("unicode_escape")


def plain(regex: str) -> str:
    """A property-name regex written with or without its dots escaped, as the name it matches."""
    return regex.strip().replace("\\.", ".")


@pytest.mark.parametrize("flavour,version", RELEASES)
def test_the_written_exclusions_hold_every_release_s_own(flavour, version):
    """`config.properties.exclude` replaces DefaultConfigPropertyFilter's default: the program's
    list (TOPIC_CONFIG_EXCLUDES) holds every entry of each release's default, and nothing else."""
    release = find(Flavour(flavour), version)
    (jar,) = [str(j) for j in jars.release_jars(release).glob(f"connect-mirror-{release.kafka}.jar")]
    default = [plain(r) for r in constant(jar, FILTER, "CONFIG_PROPERTIES_EXCLUDE_DEFAULT").split(",")]
    ours = [plain(r) for r in TOPIC_CONFIG_EXCLUDES]
    assert set(default) <= set(ours), sorted(set(default) - set(ours))
    # Each of ours is some supported release's.
    assert {"3.8.0": 6, "3.9.0": 6, "4.1.0": 6, "4.2.0": 6, "4.3.1": 8}[release.kafka] == len(default)
    assert sorted(ours) == sorted(set(ours))
    assert len(ours) == 8


def config_names(jar: str, *classes: str) -> set[str]:
    """Every `*_CONFIG` string constant of `classes` (one javap run): the setting names they define."""
    javap = shutil.which("javap")
    if javap is None:
        unavailable("no javap (a JDK) on PATH")
    done = subprocess.run([javap, "-constants", "-cp", jar, *classes], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return set(re.findall(r'String \w+_CONFIG = "([^"]*)";', done.stdout))


@pytest.mark.parametrize("flavour,version", RELEASES)
def test_the_worker_keys_refused_in_a_connector_config_are_the_workers_alone(flavour, version):
    """WORKER_KEYS (refused in a flow's `config` as settings that do nothing there): each is a
    setting of the release's Connect worker (WorkerConfig, DistributedConfig) and of no connector
    config MirrorMaker 2's connectors read (ConnectorConfig, SourceConnectorConfig, the Mirror*Config)."""
    release = find(Flavour(flavour), version)
    folder = jars.release_jars(release)
    (runtime,) = [str(j) for j in folder.glob(f"connect-runtime-{release.kafka}.jar")]
    (mirror,) = [str(j) for j in folder.glob(f"connect-mirror-{release.kafka}.jar")]
    worker = config_names(runtime, "org.apache.kafka.connect.runtime.WorkerConfig",
                          "org.apache.kafka.connect.runtime.distributed.DistributedConfig")
    connector = config_names(runtime, "org.apache.kafka.connect.runtime.ConnectorConfig",
                             "org.apache.kafka.connect.runtime.SourceConnectorConfig") | config_names(
        mirror, *(f"org.apache.kafka.connect.mirror.{c}" for c in (
            "MirrorConnectorConfig", "MirrorSourceConfig", "MirrorCheckpointConfig", "MirrorHeartbeatConfig")))
    assert set(WORKER_KEYS) <= worker, sorted(set(WORKER_KEYS) - worker)
    assert set(WORKER_KEYS) & connector == set()
