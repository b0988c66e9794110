"""The folders the commands write whole: `render --out`, `rehearse --keep`, the policy pack's OUT and
the audit sample's DIR.

Each is replaced whole on the next run (so nothing stale survives), which makes the path the user
gives dangerous: a command replaces only a folder that is absent, empty, or one it wrote itself
(its marker file in it), never a folder of the user's own files, a file, or the sources it copies
from. A refusal is a command-line problem (exit 2) before anything is written.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from infra.core.errors import Problem, TopologyError


@dataclass(frozen=True)
class Written:
    """One command's folder: `marker` names the file that says the command wrote it."""
    flag: str      # how the command line names the folder: "--out", "OUT"
    marker: str    # the file the command leaves in it
    previous: str  # what the command wrote before, for messages: "a previous render"
    command: str   # the command, named in the marker

    @property
    def note(self) -> str:
        return f"written by `{self.command}`; the folder is replaced whole at each run\n"

    def problem(self, out: Path, value: object, allowed: str) -> TopologyError:
        return TopologyError([Problem(self.flag, str(out), value, allowed)], "the command line")

    def check(self, out: Path, sources: tuple[Path, ...] = ()) -> None:
        """Before anything is written: `out` may be replaced (absent, empty or written by this
        command), lies outside `sources` (what the command copies from) and can be written."""
        out = Path(out)
        try:
            if out.exists() and not out.is_dir():
                raise self.problem(out, "a file", f"a folder (absent, empty or {self.previous})")
            resolved = out.resolve()
            for source in sources:
                source = source.resolve()
                if resolved == source or source in resolved.parents or resolved in source.parents:
                    raise self.problem(out, f"a folder holding or held by {source}",
                                       f"a folder outside the sources it is written from (choose another {self.flag})")
            if out.exists() and any(out.iterdir()) and not (out / self.marker).exists():
                raise self.problem(out, "a folder with other files",
                                   f"an empty folder or {self.previous} (choose another {self.flag})")
            # Nothing is created before the command succeeds: the nearest existing folder must let
            # this user create what is missing (or write into `out`).
            existing = out
            while not existing.exists():
                existing = existing.parent
            if not existing.is_dir():
                raise self.problem(out, f"{existing} is a file", "a folder path")
            if not os.access(existing, os.W_OK | os.X_OK):
                raise self.problem(out, None, f"a folder this user can write ({existing}: Permission denied)")
        except OSError as exc:
            raise self.problem(out, None, f"a folder this user can write ({exc.strerror})") from None

    def replace(self, out: Path, sources: tuple[Path, ...] = ()) -> Path:
        """`out` emptied (checked again: the folder may have changed since) and marked as ours."""
        out = Path(out)
        self.check(out, sources)
        try:
            if (out / self.marker).exists():
                shutil.rmtree(out)  # ours: replaced whole, so no stale file survives
            out.mkdir(parents=True, exist_ok=True)
            (out / self.marker).write_text(self.note)
        except OSError as exc:
            raise self.problem(out, None, f"a folder this user can write ({exc.strerror})") from None
        return out


RENDER = Written("--out", ".kafka-replication-render", "a previous render", "python -m infra render")
REHEARSAL = Written("--keep", ".kafka-replication-rehearsal", "a previous rehearsal's folder",
                    "python -m infra rehearse --keep")
POLICY_PACK = Written("OUT", ".kafka-replication-policy-pack", "a pack this command wrote",
                      "python -m infra.tools.policy_pack")
SAMPLE = Written("DIR", ".kafka-replication-sample", "a sample this command wrote", "python -m infra.tools.sample")
