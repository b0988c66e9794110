"""The policy pack as an organisation publishes it (docs/policy.md#publishing-it): one folder that
holds everything it imports.

policy/ runs inside this checkout, on the project's virtualenv (its rules import `infra`). This
writes a folder that runs anywhere: policy/'s files; the project's own packages the rules import
(`infra` and the `contract` below it, their Python sources, so the pack runs exactly the rules of
this version); a requirements.txt with the versions the deploy level locks (requirements/deploy.txt,
what `infra` imports) and the pack's SDK (policy/requirements.txt); and a PulumiPolicy.yaml whose
virtualenv is the pack's own (`venv`, in the folder, which the Pulumi CLI creates and fills from
requirements.txt when it runs a folder pack). `pulumi policy publish` from that folder uploads it,
and Pulumi Cloud installs the requirements where it enforces it.

    python -m infra.tools.policy_pack OUT      # `make policy-pack`: OUT = build/policy-pack
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import yaml

from infra.core.errors import TopologyError
from infra.tools import folders

ROOT = Path(__file__).resolve().parents[2]
PACK = ROOT / "policy"
VENDORED = ("infra", "contract")  # the packages the rules import (infra.checks.policies and below)
VIRTUALENV = "venv"               # the pack's own, inside its folder


def requirements() -> list[str]:
    """The pinned requirements: the deploy level's lock, then the pack's SDK, comments left out."""
    def pins(path: Path) -> list[str]:
        return [line.strip() for line in path.read_text().splitlines() if line.strip() and not line.startswith("#")]
    return pins(ROOT / "requirements" / "deploy.txt") + pins(PACK / "requirements.txt")


def build(out: Path) -> Path:
    """The self-contained pack in `out` (replaced whole when this wrote it before; refused when it
    holds other files or lies in, or holds, the sources it copies: infra/tools/folders.py); returns it."""
    folders.POLICY_PACK.replace(out, sources=(PACK, *(ROOT / package for package in VENDORED)))
    for name in ("__main__.py", "rules.py"):
        shutil.copy(PACK / name, out / name)
    for package in VENDORED:
        shutil.copytree(ROOT / package, out / package, ignore=lambda d, files: [
            f for f in files if f == "__pycache__" or (Path(d, f).is_file() and not f.endswith(".py"))])
    config = yaml.safe_load((PACK / "PulumiPolicy.yaml").read_text())
    config["runtime"]["options"]["virtualenv"] = VIRTUALENV
    (out / "PulumiPolicy.yaml").write_text(
        "# The kafka-replication policy pack, self-contained (docs/policy.md#publishing-it): written by\n"
        "# `make policy-pack` from policy/; its own virtualenv, filled from requirements.txt.\n"
        + yaml.safe_dump(config, sort_keys=False))
    (out / "requirements.txt").write_text(
        "# The pack's libraries at the versions the project locks (requirements/deploy.txt and\n"
        "# policy/requirements.txt); the project's own rules are the infra/ and contract/ beside it.\n"
        + "\n".join(requirements()) + "\n")
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m infra.tools.policy_pack OUT", file=sys.stderr)
        return 2
    try:
        print(build(Path(argv[0])))
    except TopologyError as exc:
        print(f"error: {exc.report()}", file=sys.stderr)
        return 2
    except OSError as exc:  # the folder changed under the copy: say which file, no traceback
        print(f"error: writing the pack to {argv[0]}: {exc.strerror}: {exc.filename}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
