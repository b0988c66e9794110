"""The wheel's one build step beyond pyproject.toml: the files the tools read at run time that
live outside the packages (infra/tools/shipped.py finds them), copied into the built package
under infra/tools/_shipped/. tests/runtime/test_installed.py builds the wheel, installs it in a
fresh virtualenv and runs every command from a project outside this repository."""

import os
import re
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

SHIPPED = ("pom.xml", "tools/engine", "tools/strimzi-crds/pom.xml", "tools/jmx-exporter/pom.xml")


class BuildWithShipped(build_py):
    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return  # an editable install reads the checkout itself
        here = Path(__file__).resolve().parent
        target = Path(self.build_lib) / "infra" / "tools" / "_shipped"
        for relative in SHIPPED:
            source, copy = here / relative, target / relative
            copy.parent.mkdir(parents=True, exist_ok=True)
            if source.is_dir():
                shutil.copytree(source, copy, dirs_exist_ok=True)
            else:
                shutil.copyfile(source, copy)


def project_urls() -> dict[str, str]:
    """The repository's URL, when the release workflow builds the package (it sets
    KAFKA_REPLICATION_REPOSITORY): an installed release's alerts then link their runbooks to its
    docs at its tag (contract/release.py published_docs)."""
    url = os.environ.get("KAFKA_REPLICATION_REPOSITORY", "")
    if not url:
        return {}
    if not re.fullmatch(r"https://[^\s#?]+", url):
        raise SystemExit(f"KAFKA_REPLICATION_REPOSITORY={url!r}: the repository's https URL, or unset")
    return {"Repository": url.rstrip("/")}


setup(cmdclass={"build_py": BuildWithShipped}, project_urls=project_urls())
