"""tools/release.py, the release workflow's checks and assets (docs/release.md): the tree names
one release everywhere it must (contract/release.py's RELEASE), a tag that is not the tree's
release is refused with every reason at once, and the assets are the same bytes on every run.
The workflow's scripts run for real, up to the upload, in tests/runtime/test_installed.py."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from contract.release import RELEASE
from tests.support.stacks import ROOT

spec = importlib.util.spec_from_file_location("release_tool", ROOT / "tools" / "release.py")
assert spec is not None and spec.loader is not None
release = importlib.util.module_from_spec(spec)
spec.loader.exec_module(release)

NAMED = ("CHANGELOG.md", "docs/examples/template/requirements.txt", "policy/PulumiPolicy.yaml", "components/schema.json")


@pytest.fixture
def tree(tmp_path) -> Path:
    """The files a release names RELEASE in, copied."""
    for name in NAMED:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, tmp_path / name)
    return tmp_path


def test_the_tree_names_one_release():
    assert release.consistency() == []
    (newest, date, _), *_ = release.sections(ROOT)
    assert newest == RELEASE and (date == "unreleased" or release.DATE.fullmatch(date))


def test_an_undated_release_is_not_tagged(tree):
    """Until the release commit dates its section, the tag of the right version is refused too."""
    def dated(date: str) -> None:
        text = (tree / "CHANGELOG.md").read_text()
        (tree / "CHANGELOG.md").write_text(re.sub(rf"^## \[{re.escape(RELEASE)}\] - \S+$", f"## [{RELEASE}] - {date}",
                                                  text, count=1, flags=re.M))
    dated("unreleased")
    assert release.check(f"v{RELEASE}", tree) == [
        f"CHANGELOG.md: the section of {RELEASE} is dated 'unreleased': the release commit writes "
        f"`## [{RELEASE}] - YYYY-MM-DD`"]
    dated("2026-11-29")
    assert release.check(f"v{RELEASE}", tree) == []


def test_every_reason_a_tag_is_not_the_release_at_once(tree):
    (tree / "CHANGELOG.md").write_text((tree / "CHANGELOG.md").read_text().replace(
        f"## [{RELEASE}] - ", "## [9.9.9] - 2026-11-29\n\n## [" + RELEASE + "] - ", 1))
    requirements = tree / "docs/examples/template/requirements.txt"
    requirements.write_text(requirements.read_text().replace(f"=={RELEASE}", "==0.0.9"))
    policy = tree / "policy/PulumiPolicy.yaml"
    policy.write_text(policy.read_text().replace(f"version: {RELEASE}", "version: 0.0.9"))
    schema = json.loads((tree / "components/schema.json").read_text())
    (tree / "components/schema.json").write_text(json.dumps({**schema, "version": "0.0.9"}))
    assert release.check("v9.9.9", tree) == [
        f"tag v9.9.9: the tree's release is {RELEASE} (contract/release.py); tag v{RELEASE}, or make a release "
        "commit for 9.9.9 first (docs/release.md)",
        f"CHANGELOG.md: the newest section is 9.9.9, the release is {RELEASE} (contract/release.py): one of them is stale",
        "docs/examples/template/requirements.txt: the template installs ['kafka-replication[rehearse]==0.0.9'], not "
        f"the release's `kafka-replication[rehearse]=={RELEASE}`",
        f"policy/PulumiPolicy.yaml: version 0.0.9, not the release's {RELEASE}",
        f"components/schema.json: version 0.0.9, not the release's {RELEASE} (`make schema` writes it)"]
    assert release.check("release-1", tree)[0] == (f"tag 'release-1': a release's tag is vMAJOR.MINOR.PATCH, "
                                                  f"e.g. v{RELEASE}")


def test_the_command_exits_2_with_the_problems_and_no_traceback():
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "release.py"), "check", "v0.0.0-rc1"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines()[0] == f"error: tag 'v0.0.0-rc1': a release's tag is vMAJOR.MINOR.PATCH, e.g. v{RELEASE}"
    assert "Traceback" not in done.stderr
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "release.py"), "assets", "out", "--repository",
                           "git@example.com:x/y", "--publisher", "x"], capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stderr) == (2, "error: --repository 'git@example.com:x/y' is not an https URL, "
                                                 "or --publisher is empty\n")


def test_the_assets_are_the_same_bytes_on_every_run(tmp_path):
    first = release.assets(tmp_path / "a", "https://git.example/o/r", "o")
    second = release.assets(tmp_path / "b", "https://git.example/o/r", "o")
    assert [p.relative_to(tmp_path / "a") for p in first] == [p.relative_to(tmp_path / "b") for p in second] == [
        Path("assets/schema.json"), Path(f"assets/kafka-replication-policy-{RELEASE}.tar.gz"), Path("assets/SHA256SUMS"),
        Path("NOTES.md")]
    assert [p.read_bytes() for p in first] == [p.read_bytes() for p in second]
    schema = json.loads(first[0].read_text())
    assert (schema["repository"], schema["homepage"], schema["publisher"], schema["version"]) == (
        "https://git.example/o/r", "https://git.example/o/r", "o", RELEASE)


class _Metadata:
    def __init__(self, version: str, urls: list[str]) -> None:
        self.version, self.urls = version, urls

    def __getitem__(self, key: str) -> str:
        assert key == "Version"
        return self.version

    def get_all(self, key: str) -> list[str]:
        assert key == "Project-URL"
        return self.urls


def test_the_installed_release_s_docs_are_its_repository_at_its_tag(monkeypatch):
    """The alerts' default runbook link (contract/release.py published_docs): the repository the
    release build stamped, at the release's tag; nothing for a development build, a build without
    the URL, a URL that is not https, or no installed package (a checkout). The rules that use it:
    tests/runtime/test_installed.py renders them from the release's wheel."""
    from importlib import metadata

    import contract.release as module
    repository = "Repository, https://github.com/platform/kafka-replication/"
    cases = [(_Metadata(RELEASE, [repository]), f"https://github.com/platform/kafka-replication/blob/v{RELEASE}/docs"),
             (_Metadata(f"{RELEASE}.dev3+gabc", [repository]), None),
             (_Metadata(RELEASE, []), None),
             (_Metadata(RELEASE, ["Homepage, https://example.com", "Repository, http://plain.example/x"]), None)]
    for found, expected in cases:
        monkeypatch.setattr(module.metadata, "metadata", lambda name, found=found: found)
        assert module.published_docs() == expected

    def missing(name: str):
        raise metadata.PackageNotFoundError(name)
    monkeypatch.setattr(module.metadata, "metadata", missing)
    assert module.published_docs() is None
