"""A release's checks and assets (docs/release.md), run by .github/workflows/release.yml on a tag
`vX.Y.Z`, and locally by tests/runtime/test_installed.py up to the upload:

    python3 tools/release.py check vX.Y.Z        # the tree is that release, or exit 2 with every problem
    python3 tools/release.py assets DIR --repository URL --publisher NAME

`check` holds what a release must name in one place (contract/release.py's RELEASE): the tag, the
dated CHANGELOG.md section, the template's pin, the policy pack's and the provider schema's
versions. `assets` writes, beside the wheel and sdist `python -m build` puts in DIR/assets: the
provider schema with the registry's metadata (the repository and publisher are the host's, known
only where the workflow runs), the self-contained policy pack as a tarball, SHA256SUMS over them
all, and DIR/NOTES.md, the CHANGELOG section the release page shows. Every file it writes is a
function of the tree and its arguments: two runs give the same bytes.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import re
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script: the tree's own packages
    sys.path.insert(0, str(ROOT))

from contract.release import PACKAGE, RELEASE  # noqa: E402

CHANGELOG = "CHANGELOG.md"
TEMPLATE_REQUIREMENTS = "docs/examples/template/requirements.txt"
POLICY = "policy/PulumiPolicy.yaml"
SCHEMA = "components/schema.json"
TAG = re.compile(r"v(?P<version>[0-9]+\.[0-9]+\.[0-9]+)")
# Keep a Changelog's headings: `## [0.1.0] - 2026-11-29`; before the release commit, `- unreleased`.
SECTION = re.compile(r"^## \[(?P<version>[^\]]+)\] - (?P<date>\S+)$", re.M)
DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


def sections(root: Path) -> list[tuple[str, str, str]]:
    """CHANGELOG.md's sections, newest first: (version, date, body)."""
    text = (root / CHANGELOG).read_text()
    found = list(SECTION.finditer(text))
    return [(m["version"], m["date"], text[m.end():found[i + 1].start() if i + 1 < len(found) else len(text)].strip())
            for i, m in enumerate(found)]


def consistency(root: Path = ROOT) -> list[str]:
    """What must name RELEASE on every commit (tests/unit/test_release.py holds it)."""
    problems = []
    try:
        listed = sections(root)
    except OSError as exc:
        listed = []
        problems.append(f"{CHANGELOG}: {exc.strerror}")
    if not listed:
        problems.append(f"{CHANGELOG}: no section `## [{RELEASE}] - <date>`; its newest section names the release")
    elif listed[0][0] != RELEASE:
        problems.append(f"{CHANGELOG}: the newest section is {listed[0][0]}, the release is {RELEASE} "
                        "(contract/release.py): one of them is stale")
    pin = f"{PACKAGE}[rehearse]=={RELEASE}"
    lines = [line.strip() for line in (root / TEMPLATE_REQUIREMENTS).read_text().splitlines()
             if line.strip() and not line.lstrip().startswith("#")]
    if pin not in lines:
        problems.append(f"{TEMPLATE_REQUIREMENTS}: the template installs {lines}, not the release's `{pin}`")
    policy = re.search(r"^version: (\S+)$", (root / POLICY).read_text(), re.M)
    if policy is None or policy[1] != RELEASE:
        problems.append(f"{POLICY}: version {policy[1] if policy else '(none)'}, not the release's {RELEASE}")
    schema = json.loads((root / SCHEMA).read_text()).get("version")
    if schema != RELEASE:
        problems.append(f"{SCHEMA}: version {schema}, not the release's {RELEASE} (`make schema` writes it)")
    return problems


def check(tag: str, root: Path = ROOT) -> list[str]:
    """Every reason the tree at `tag` is not that release, or nothing."""
    problems = []
    match = TAG.fullmatch(tag)
    if match is None:
        problems.append(f"tag {tag!r}: a release's tag is vMAJOR.MINOR.PATCH, e.g. v{RELEASE}")
    elif match["version"] != RELEASE:
        problems.append(f"tag {tag}: the tree's release is {RELEASE} (contract/release.py); tag v{RELEASE}, or "
                        f"make a release commit for {match['version']} first (docs/release.md)")
    problems += consistency(root)
    listed = sections(root) if (root / CHANGELOG).exists() else []
    if listed and listed[0][0] == RELEASE and not DATE.fullmatch(listed[0][1]):
        problems.append(f"{CHANGELOG}: the section of {RELEASE} is dated {listed[0][1]!r}: the release commit "
                        f"writes `## [{RELEASE}] - YYYY-MM-DD`")
    return problems


def _tarball(folder: Path, name: str) -> bytes:
    """`folder` as name/..., the same bytes from the same files: sorted, no times, no owners."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path in [folder, *sorted(folder.rglob("*"))]:
            inside = path.relative_to(folder).as_posix()
            info = tar.gettarinfo(str(path), arcname=name if path == folder else f"{name}/{inside}")
            info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
            info.mode = 0o755 if path.is_dir() else 0o644
            if path.is_file():
                with path.open("rb") as handle:
                    tar.addfile(info, handle)
            else:
                tar.addfile(info)
    packed = io.BytesIO()
    with gzip.GzipFile(fileobj=packed, mode="wb", mtime=0, filename="") as out:
        out.write(raw.getvalue())
    return packed.getvalue()


def assets(out: Path, repository: str, publisher: str, root: Path = ROOT) -> list[Path]:
    """The release's files beside DIR/assets' wheel and sdist; returns what it wrote."""
    from infra.tools import policy_pack  # pyyaml: the one library this needs

    folder = out / "assets"
    folder.mkdir(parents=True, exist_ok=True)
    schema = json.loads((root / SCHEMA).read_text())
    schema.update(repository=repository, homepage=repository, publisher=publisher)
    written = [folder / "schema.json"]
    written[0].write_text(json.dumps(schema, indent=2, sort_keys=True) + "\n")
    name = f"{PACKAGE}-policy-{RELEASE}"
    with tempfile.TemporaryDirectory() as work:
        pack = policy_pack.build(Path(work) / name)
        written.append(folder / f"{name}.tar.gz")
        written[-1].write_bytes(_tarball(pack, name))
    sums = [f"{hashlib.sha256(p.read_bytes()).hexdigest()}  {p.name}" for p in sorted(folder.iterdir())
            if p.is_file() and p.name != "SHA256SUMS"]
    written.append(folder / "SHA256SUMS")
    written[-1].write_text("\n".join(sums) + "\n")
    (version, date, body) = sections(root)[0]
    written.append(out / "NOTES.md")
    written[-1].write_text(f"{body}\n\nThe package: `pip install '{PACKAGE}=={version}'` from the index it is "
                           f"published to, or the wheel below; SHA256SUMS lists every file's digest.\n")
    return written


def main(argv: list[str]) -> int:
    top = argparse.ArgumentParser(prog="tools/release.py", description=__doc__.split("\n\n")[0])
    sub = top.add_subparsers(dest="command", required=True)
    sub.add_parser("check", help="the tree is the tag's release").add_argument("tag")
    a = sub.add_parser("assets", help="the schema, policy pack, checksums and notes")
    a.add_argument("out", type=Path)
    a.add_argument("--repository", required=True, help="the repository's URL, e.g. https://github.com/ORG/REPO")
    a.add_argument("--publisher", required=True, help="who publishes the package, e.g. the GitHub organisation")
    args = top.parse_args(argv)
    if args.command == "check":
        problems = check(args.tag)
        for problem in problems:
            print(f"error: {problem}", file=sys.stderr)
        if not problems:
            print(f"{args.tag}: the tree is release {RELEASE}")
        return 2 if problems else 0
    if not re.fullmatch(r"https://\S+", args.repository) or not args.publisher.strip():
        print(f"error: --repository {args.repository!r} is not an https URL, or --publisher is empty", file=sys.stderr)
        return 2
    try:
        for path in assets(args.out, args.repository, args.publisher):
            print(path)
    except OSError as exc:
        print(f"error: writing the release's files: {exc.strerror}: {exc.filename}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
