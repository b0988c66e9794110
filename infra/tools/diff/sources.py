"""The two sides of a diff: a stack rendered in the working tree, or at a git revision in its own
extracted tree, with that commit's own program, topology and stack config."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from pathlib import Path

from infra.core.errors import Problem, TopologyError
from infra.tools.diff.model import ABSENT, Snapshot, read_folder, snapshot

# ------------------------------------------------------------------------------- the two sides


def stacks_in(root: Path) -> list[str]:
    """The stacks of a tree: one `Pulumi.<stack>.yaml` each."""
    return sorted(p.name[len("Pulumi."):-len(".yaml")] for p in root.glob("Pulumi.*.yaml"))


def render_here(stack: str, topology: Path | None = None) -> Snapshot:
    """The working tree's render of `stack` (with `topology` instead of the stack's own)."""
    from infra.deploy import config as stack_config
    from infra.tools import render
    config = stack_config.plain(stack)
    if topology is not None:
        config["topology"] = str(topology.resolve())
    try:
        result = render.run(stack, config, {}, placeholder_secrets=True)
    except TopologyError as exc:
        # Several stacks and two sides: the problems say which stack and file they are in.
        path = config.get(stack_config.TOPOLOGY_KEY, f"stacks/{stack}.yaml")
        raise TopologyError(exc.problems, f"stack {stack}'s topology ({path})") from None
    finally:
        render.close_event_loop()
    return snapshot(result.placed_objects(), result.outputs)


# Bounds of the base side: a render at a ref runs that tree's program in a child process.
RENDER_SECONDS = 600


MAX_REF = 200


def render_at(ref: str, stacks: list[str] | None, root: Path, workdir: Path) -> dict[str, Snapshot]:
    """Each stack of the Pulumi project at `root` rendered by the tree of git `ref` (its topology
    and stack config, and its program where the tree holds one: this repository's own; a team's
    project renders with the installed package), in a child process run in an extracted copy of
    that tree (`root` may be a folder of the repository: git archives that folder): the
    base side of a diff. Without `stacks`, every stack of either side (`root`'s and the revision's)."""
    def refused(value: object, allowed: str) -> TopologyError:
        return TopologyError([Problem("--base", "(argument)", value, allowed)], "the command line")

    if not ref or len(ref) > MAX_REF or ref.startswith("-") or any(c.isspace() or ord(c) < 32 for c in ref):
        raise refused(ref, f"a git revision: a branch, tag or commit (at most {MAX_REF} characters, no spaces)")
    try:
        inside = subprocess.run(["git", "-C", str(root), "rev-parse", "--is-inside-work-tree"], capture_output=True,
                                text=True, timeout=60)
        found = subprocess.run(["git", "-C", str(root), "rev-parse", "--verify", "--quiet", "--end-of-options",
                                f"{ref}^{{commit}}"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise refused(ref, f"a revision of the repository at {root} (git could not run: {exc})") from None
    if inside.stdout.strip() != "true":
        raise refused(ref, f"a revision of a git repository: {root} is not in one (compare two files with "
                           "--before and --after instead)")
    if found.returncode != 0:
        raise refused(ref, f"a commit of the repository at {root} (fetch the base branch first, e.g. "
                           "`git fetch origin main`)")
    commit = found.stdout.strip()
    tree = workdir / "tree"
    tree.mkdir(parents=True)
    archive = workdir / "tree.tar"
    with archive.open("wb") as sink:
        done = subprocess.run(["git", "-C", str(root), "archive", "--format=tar", commit], stdout=sink,
                              stderr=subprocess.PIPE, timeout=300)
    if done.returncode != 0:
        raise refused(ref, f"a commit git can archive ({done.stderr.decode(errors='replace').strip()})")
    listed = subprocess.run(["git", "-C", str(root), "ls-tree", "--name-only", commit], capture_output=True,
                            timeout=60)
    if listed.stdout.strip():  # an empty tree's archive is a bare header, which tarfile cannot open
        try:
            with tarfile.open(archive) as tar:
                tar.extractall(tree, filter=_inside)
        except tarfile.TarError as exc:
            raise refused(ref, f"a commit whose tree can be read ({exc})") from None
    # Run from a folder of a repository (a team's project beside its other code), git archives
    # that folder alone: the extracted tree is the project's folder.
    if stacks is None:
        stacks = sorted(set(stacks_in(root)) | set(stacks_in(tree)))
    result = {}
    for stack in stacks:
        if not (tree / f"Pulumi.{stack}.yaml").exists():
            result[stack] = ABSENT
            continue
        out = workdir / "out" / stack
        try:
            ran = subprocess.run([sys.executable, "-m", "infra", "render", "--stack", stack, "--out", str(out),
                                  "--placeholder-secrets"], cwd=tree, capture_output=True, text=True,
                                 timeout=RENDER_SECONDS, env={**_environ(), "PYTHONPATH": str(tree)})
        except subprocess.TimeoutExpired:
            raise refused(ref, f"a commit whose stack {stack} renders within {RENDER_SECONDS} s") from None
        if ran.returncode != 0:
            reason = " ".join((ran.stderr or ran.stdout).strip().splitlines()[-12:])
            raise refused(ref, f"a commit whose stack {stack} renders (its render exited {ran.returncode}: {reason})")
        result[stack] = read_folder(out)
    return result


def _inside(member: tarfile.TarInfo, dest: str) -> tarfile.TarInfo | None:
    """tarfile's `data` filter, but a link that leads outside the tree (or is absolute) is left
    out instead of failing the whole extraction: the base render never follows it, and if it
    needs the file its render fails and says which."""
    try:
        return tarfile.data_filter(member, dest)
    except tarfile.FilterError:
        return None


def _environ() -> dict[str, str]:
    # The child runs the base tree's program: nothing of ours may leak into its config.
    return {k: v for k, v in os.environ.items() if not k.startswith(("PULUMI_", "INFRA_"))}
