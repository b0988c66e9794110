"""The jars of each operator release (pom.xml), of the audit's Spark Kafka source
(spark/pom.xml) and of Strimzi's CRD generator (tools/strimzi-crds/pom.xml), copied by Maven once
into a cache outside the repository.

The cache is `$KAFKA_REPLICATION_CACHE/jars` (default `~/.cache/kafka-replication/jars`), a folder
per Maven profile; a stamp of the POM's hash says which build fills it, so a changed pin
rebuilds it and nothing else does. Maven reaches the registry its own settings name.
"""

from __future__ import annotations

import fcntl
import hashlib
import shutil
import subprocess
import zipfile
from pathlib import Path
from typing import Callable

from infra.core.releases import Release
from infra.tools import shipped
from infra.tools.rehearsal.process import cache_root, java

POM = shipped.path("pom.xml")
AUDIT_POM = shipped.path("spark/pom.xml")
CRDS_POM = shipped.path("tools/strimzi-crds/pom.xml")
EXPORTER_POM = shipped.path("tools/jmx-exporter/pom.xml")
EXPORTER_SOURCE = Path(__file__).resolve().parent / "ExporterAgent.java"
EXPORTER_MAIN = "ExporterAgent"


class JarsError(RuntimeError):
    pass


def cache() -> Path:
    return cache_root() / "jars"


def profile(release: Release) -> str:
    """The pom.xml profile of a release: `csm-1.2`, `strimzi-1.2.0`."""
    return f"{release.flavour.value}-{release.version}"


def filled_once(target: Path, digest: str, fill: Callable[[Path], None]) -> Path:
    """`target`, filled by `fill(partial folder)` unless a stamp of `digest` says it already is.
    Test tiers run side by side (`make test`): one process fills a folder under a lock, the
    others wait for it; a fill that fails leaves the last good folder, or none."""
    stamp = target / ".stamp"
    if stamp.is_file() and stamp.read_text() == digest:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.with_name(target.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if stamp.is_file() and stamp.read_text() == digest:
            return target
        partial = target.with_name(target.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir()
        fill(partial)
        (partial / ".stamp").write_text(digest)
        shutil.rmtree(target, ignore_errors=True)
        partial.rename(target)
    return target


def _copy(pom: Path, folder: str, profile_args: list[str], arrange: Callable[[Path], None] = lambda _: None,
          also: bytes = b"") -> Path:
    """`folder` of the cache filled with the POM's dependencies under `profile_args`, then
    `arrange`d; refilled when the POM (or `also`: a source built from them) changes."""
    def fill(partial: Path) -> None:
        mvn = shutil.which("mvn")
        if mvn is None:
            raise JarsError("Maven (mvn) is not installed: it fetches the pinned jars (pom.xml)")
        done = subprocess.run([mvn, "-q", "-B", "-f", str(pom), *profile_args, "dependency:copy-dependencies",
                               f"-DoutputDirectory={partial}"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, timeout=1800)
        if done.returncode != 0:
            raise JarsError(f"Maven could not copy the jars of {folder} (exit {done.returncode}):\n"
                            + done.stdout[-3000:])
        arrange(partial)
    return filled_once(cache() / folder, hashlib.sha256(pom.read_bytes() + also).hexdigest(), fill)


AGENTS = "agents"
JMX_EXPORTER_AGENT = "jmx_prometheus_javaagent-*.jar"


def release_jars(release: Release) -> Path:
    """The folder holding the release's broker, Connect, MirrorMaker 2 and config providers.
    Java agents are kept in a folder of their own beside them (the images keep the exporter
    outside the classpath too: `$JMX_EXPORTER_HOME` from Strimzi 0.46), so `<folder>/*` is the
    classpath and nothing more."""
    return _copy(POM, profile(release), ["-P", profile(release)], _agents_apart)


def connect_jars(release: Release, kafka: str) -> Path:
    """The release's folder with Apache Kafka `kafka` (a `KafkaConnect.spec.version`'s Apache
    release, Release.apache_kafka) in place of its default: the Connect image of that version.
    The release's own versions of everything else (config providers, logging, the agent)."""
    if kafka == release.kafka:
        return release_jars(release)
    return _copy(POM, f"{profile(release)}-kafka-{kafka}", ["-P", profile(release), f"-Dkafka.version={kafka}"],
                 _agents_apart)


def _agents_apart(folder: Path) -> None:
    for jar in folder.glob(JMX_EXPORTER_AGENT):
        (folder / AGENTS).mkdir(exist_ok=True)
        jar.replace(folder / AGENTS / jar.name)


def jmx_exporter_agent(release: Release) -> Path:
    """The Prometheus JMX exporter agent of the release's Connect image: the published agent where
    the release's profile names it (pom.xml), else the exporter's published rule engine under
    our launcher (tools/jmx-exporter/pom.xml, ExporterAgent.java)."""
    found = sorted((release_jars(release) / AGENTS).glob(JMX_EXPORTER_AGENT))
    if len(found) > 1:
        raise JarsError(f"{profile(release)}: expected one {JMX_EXPORTER_AGENT} in {release_jars(release) / AGENTS}, "
                        f"found {[p.name for p in found]}")
    if found:
        return found[0]
    folder = _copy(EXPORTER_POM, f"exporter-{profile(release)}", ["-P", profile(release)], _launcher,
                   also=EXPORTER_SOURCE.read_bytes())
    return folder / f"{EXPORTER_MAIN}.jar"


def _launcher(folder: Path) -> None:
    """The exporter's libraries moved to `lib/` and ExporterAgent.java compiled against them into
    `ExporterAgent.jar`, a Java agent (Premain-Class) that finds `lib/` beside itself."""
    lib = folder / "lib"
    lib.mkdir()
    for jar in folder.glob("*.jar"):
        jar.replace(lib / jar.name)
    classes = folder / "classes"
    javac = str(Path(java()).with_name("javac"))
    done = subprocess.run([javac, "-nowarn", "--release", "11", "-d", str(classes), "-cp", str(lib / "*"),
                           str(EXPORTER_SOURCE)], capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise JarsError(f"{EXPORTER_SOURCE.name} does not compile against {lib}:\n{done.stderr[-3000:]}")
    with zipfile.ZipFile(folder / f"{EXPORTER_MAIN}.jar", "w") as agent:
        agent.writestr("META-INF/MANIFEST.MF", f"Manifest-Version: 1.0\nPremain-Class: {EXPORTER_MAIN}\n\n")
        for cls in sorted(classes.glob("*.class")):
            agent.write(cls, cls.name)
    shutil.rmtree(classes)


def audit_jars() -> list[Path]:
    """Spark's Kafka source and its dependencies, as local jars for `spark.jars`."""
    return sorted(_copy(AUDIT_POM, "audit", []).glob("*.jar"))


def crd_generator_jars(strimzi: str) -> Path:
    """Strimzi's model classes and CRD generator for a Strimzi line (crds.py runs them)."""
    return _copy(CRDS_POM, f"crds-{strimzi}", ["-P", f"crds-{strimzi}"])


def classpath(release: Release, kafka: str | None = None) -> str:
    """`<folder>/*` of the release's jars, or of the Connect image of Apache Kafka `kafka`."""
    return str((release_jars(release) if kafka is None else connect_jars(release, kafka)) / "*")
