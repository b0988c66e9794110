"""The project's newest release, in its one home.

The installed package's own version comes from git (the tag `vX.Y.Z` of a release, a `.devN`
version between releases: setuptools-scm, pyproject.toml). What the tree must name before the
package is built is this release: the audit image's default tag, the provider schema's version,
the policy pack's, the template's pin and CHANGELOG.md's newest section. tests/unit/test_release.py
holds them equal to it, and the release workflow (.github/workflows/release.yml, tools/release.py)
refuses a tag that is not `v` + RELEASE."""

from __future__ import annotations

from importlib import metadata

RELEASE = "0.1.0"
PACKAGE = "kafka-replication"  # the distribution's name: what pip installs and pins


def published_docs() -> str | None:
    """Where the installed release's docs are published: its repository's URL, which the release
    workflow stamps into the package's metadata (`Project-URL: Repository`, setup.py), at the
    release's tag. None for a checkout, a development build or a build without that URL: the
    alerts then carry the repository path of their runbook, or the stack's runbookBaseUrl."""
    try:
        found = metadata.metadata(PACKAGE)
    except metadata.PackageNotFoundError:
        return None
    if found["Version"] != RELEASE:
        return None
    for entry in found.get_all("Project-URL") or []:
        label, _, url = entry.partition(", ")
        if label == "Repository" and url.startswith("https://"):
            return f"{url.rstrip('/')}/blob/v{RELEASE}/docs"
    return None
