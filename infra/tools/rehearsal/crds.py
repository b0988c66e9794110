"""Strimzi's CRDs of KafkaConnect, KafkaConnector and StrimziPodSet for each Strimzi line a supported release is
or ships (0.43.0 for CSM 1.2, 0.45.0 for CSM 1.4, 0.48.0, 0.51.0, 1.2.0), generated from its published
artifacts (tools/strimzi-crds/pom.xml) into a cache outside the repository, as the jars are.

Strimzi writes its install files with its own generator at build time: api/pom.xml, the
exec-maven-plugin execution `generate-crd-co-install-v1`, runs `io.strimzi.crdgenerator.CrdGenerator`
on the api module's classes with the arguments of `generate` below (the same at 0.43.0, 0.45.0,
0.48.0, 0.51.0 and 1.2.0 but for the API versions each serves and stores). The released files are that
output unchanged (no header; tests/conformance/test_crds_as_released.py shows the result byte-equal to the
released 0.48.0 and 1.2.0 files where a copy of them is at hand).
"""

from __future__ import annotations

import hashlib
import subprocess
from dataclasses import dataclass
from pathlib import Path

from infra.core.releases import V1, V1BETA2, Release
from infra.tools.rehearsal import jars
from infra.tools.rehearsal.process import RuntimeStartError, java_at_least

# The Strimzi CRD files the rendered objects need: `<kind>` -> (model class, released file name).
FILES = {
    "KafkaConnect": ("io.strimzi.api.kafka.model.connect.KafkaConnect", "041-Crd-kafkaconnect.yaml"),
    "KafkaConnector": ("io.strimzi.api.kafka.model.connector.KafkaConnector", "047-Crd-kafkaconnector.yaml"),
    # Not rendered: the operator makes one per KafkaConnect for its pods (`<name>-connect`,
    # KafkaConnectCluster.generatePodSet), in core.strimzi.io, which moves to v1 with the rest;
    # the upgrade runbook migrates its storage (tests/engine/test_upgrade_runbook.py).
    "StrimziPodSet": ("io.strimzi.api.kafka.model.podset.StrimziPodSet", "042-Crd-strimzipodset.yaml"),
}


@dataclass(frozen=True)
class Line:
    """How one Strimzi line's CRDs are generated."""
    api_versions: str         # the versions the CRDs serve (`--api-versions`), the stored one first
    java: int                 # the generator's class files: Java 17 up to 0.4x, Java 21 for 1.x
    deprecated_false: bool = False  # see below

    @property
    def storage_version(self) -> str:
        return self.api_versions.split(",")[0]


# io.strimzi:crd-generator:0.48.0 is not served by the registry; 1.2.0's generator runs on 0.48.0's
# classes. The one difference: the 0.48.x generator wrote `deprecated: false` after `storage:` on
# every version (added in 0.48.0, strimzi-kafka-operator PR #11805; limited to deprecated versions
# again in 0.49.0, PR #11985), and the released 0.48.0 files carry it.
# The bridge release 0.51.0 serves both versions and stores v1beta2 (its api/pom.xml:
# `--api-versions v1beta2,v1 --storage-version v1beta2`); io.strimzi:crd-generator:0.51.0 is not
# served either, and 1.2.0's runs on its classes.
_V1BETA2, _V1 = V1BETA2.split("/")[1], V1.split("/")[1]
LINES = {
    "0.43.0": Line(_V1BETA2, 17),
    "0.45.0": Line(_V1BETA2, 17),
    "0.48.0": Line(_V1BETA2, 21, deprecated_false=True),
    "0.51.0": Line(f"{_V1BETA2},{_V1}", 21),
    "1.2.0": Line(_V1, 21),
}

MAIN = "io.strimzi.crdgenerator.CrdGenerator"


class CrdsError(RuntimeError):
    pass


def arguments(line: Line, folder: Path) -> list[str]:
    """CrdGenerator's arguments in Strimzi's api/pom.xml (`--target-kube 1.16+` and
    `--crd-api-version v1` are also its defaults)."""
    return ["--label", "app:strimzi", "--label", "strimzi.io/crd-install:true", "--target-kube", "1.16+",
            "--crd-api-version", "v1", "--api-versions", line.api_versions, "--storage-version", line.storage_version,
            "--yaml", *(f"{cls}={folder / name}" for cls, name in FILES.values())]


def folder(strimzi: str) -> Path:
    """The folder holding the CRD files of a Strimzi line, generated once (a stamp of the POM and
    of this module's arguments says which generation filled it)."""
    if strimzi not in LINES:
        raise CrdsError(f"no CRDs for Strimzi {strimzi}: known lines are {', '.join(LINES)}")
    line = LINES[strimzi]
    digest = hashlib.sha256(jars.CRDS_POM.read_bytes() + repr((line, arguments(line, Path("-")))).encode()).hexdigest()
    return jars.filled_once(jars.cache().parent / "strimzi-crds" / strimzi, digest,
                            lambda partial: _generate(strimzi, line, partial))


def for_release(release: Release) -> Path:
    """The CRDs that validate a release's objects: those of the Strimzi line it is or ships."""
    return folder(release.strimzi)


def _generate(strimzi: str, line: Line, partial: Path) -> None:
    try:
        classes = jars.crd_generator_jars(strimzi)
        java = java_at_least(line.java)
    except (jars.JarsError, RuntimeStartError) as exc:
        raise CrdsError(f"Strimzi {strimzi} CRDs: {exc}") from None
    done = subprocess.run([java, "-cp", f"{classes}/*", MAIN, *arguments(line, partial)],
                          capture_output=True, text=True, timeout=600)
    written = sorted(p.name for p in partial.glob("*.yaml"))
    if done.returncode != 0 or written != sorted(name for _, name in FILES.values()):
        raise CrdsError(f"Strimzi {strimzi} CRDs: the generator exited {done.returncode} and wrote {written}:\n"
                        + (done.stdout + done.stderr)[-3000:])
    if line.deprecated_false:
        for path in partial.glob("*.yaml"):
            path.write_text(_with_deprecated_false(path.read_text()))


def _with_deprecated_false(text: str) -> str:
    """`deprecated: false` after each version's `storage:` line, as the 0.48.x generator wrote it."""
    out = []
    for row in text.splitlines(keepends=True):
        out.append(row)
        if row.startswith("    storage: "):
            out.append("    deprecated: false\n")
    return "".join(out)
