"""infra/tools/folders.py: the folders the commands replace whole (the policy pack's OUT, the audit
sample's DIR, `rehearse --keep`, `render --out`) are never a folder of the user's own files, a
file, or the sources a command copies from; each refusal exits 2 before anything is written."""

from __future__ import annotations

import io
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
import yaml

from infra.core.errors import TopologyError
from infra.tools import folders, policy_pack, sample
from infra.tools.cli import main
from tests.support.stacks import doc_topology

ROOT = Path(__file__).resolve().parents[2]


def mine(folder: Path) -> Path:
    """A folder of the user's own: a file in it and one in a subfolder."""
    (folder / "sub").mkdir(parents=True)
    (folder / "notes.txt").write_text("keep me")
    (folder / "sub" / "more.txt").write_text("and me")
    return folder


def untouched(folder: Path) -> bool:
    return ((folder / "notes.txt").read_text(), (folder / "sub" / "more.txt").read_text(),
            sorted(p.name for p in folder.iterdir())) == ("keep me", "and me", ["notes.txt", "sub"])


def pack(*argv: str) -> tuple[int, str]:
    done = subprocess.run([sys.executable, "-m", "infra.tools.policy_pack", *argv], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    return done.returncode, done.stderr


def test_the_pack_writer_refuses_a_folder_of_the_users_own_files_and_deletes_nothing(tmp_path):
    out = mine(tmp_path / "out")
    assert pack(str(out)) == (2, (
        f"error: the command line has 1 problem(s):\n  - OUT: {out}: got 'a folder with other files'; "
        "expected an empty folder or a pack this command wrote (choose another OUT)\n"))
    assert untouched(out)


@pytest.mark.parametrize("inside", ["policy", "infra", "contract", ".", "policy/new", "infra/tools/new"])
def test_the_pack_writer_refuses_its_own_sources_or_a_folder_in_them(inside):
    before = sorted(p.relative_to(ROOT) for p in (ROOT / "policy").rglob("*") if "__pycache__" not in p.parts)
    code, err = pack(str(ROOT / inside))
    assert code == 2
    assert err.startswith(f"error: the command line has 1 problem(s):\n  - OUT: {ROOT / inside}: got 'a folder holding "
                          "or held by ")
    assert err.endswith("expected a folder outside the sources it is written from (choose another OUT)\n")
    assert not (ROOT / "policy" / "new").exists() and not (ROOT / "infra" / "tools" / "new").exists()
    assert sorted(p.relative_to(ROOT) for p in (ROOT / "policy").rglob("*") if "__pycache__" not in p.parts) == before


def test_the_pack_writer_refuses_a_file_without_a_traceback(tmp_path):
    afile = tmp_path / "pack.zip"
    afile.write_text("not a folder")
    assert pack(str(afile)) == (2, (
        f"error: the command line has 1 problem(s):\n  - OUT: {afile}: got 'a file'; expected a folder "
        "(absent, empty or a pack this command wrote)\n"))
    assert afile.read_text() == "not a folder"


def test_the_pack_writer_replaces_its_own_pack_whole_and_fills_an_empty_folder(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    policy_pack.build(out)  # an empty folder: accepted
    (out / "stale.py").write_text("a file of an older pack")
    policy_pack.build(out)  # its own pack: replaced whole
    assert sorted(p.name for p in out.iterdir()) == [
        ".kafka-replication-policy-pack", "PulumiPolicy.yaml", "__main__.py", "contract", "infra", "requirements.txt",
        "rules.py"]


def test_the_sample_writer_refuses_a_folder_of_the_users_own_files(tmp_path, capsys):
    out = mine(tmp_path / "data")
    assert sample.main([str(out)]) == 2
    assert capsys.readouterr().err == (
        f"error: the command line has 1 problem(s):\n  - DIR: {out}: got 'a folder with other files'; "
        "expected an empty folder or a sample this command wrote (choose another DIR)\n")
    assert untouched(out)
    fresh = tmp_path / "fresh"
    sample.write(fresh)
    (fresh / "stale.json").write_text("{}")
    sample.write(fresh)  # its own sample: replaced whole
    assert not (fresh / "stale.json").exists() and (fresh / "truth.json").exists()


def test_a_keep_folder_of_the_users_own_files_is_refused_before_anything_starts(tmp_path):
    path = tmp_path / "t.yaml"
    path.write_text(yaml.safe_dump(doc_topology()))
    keep = mine(tmp_path / "home")
    err = io.StringIO()
    with redirect_stdout(io.StringIO()), redirect_stderr(err):
        assert main(["rehearse", str(path), "--keep", str(keep)]) == 2
    assert err.getvalue() == (
        f"error: the command line has 1 problem(s):\n  - --keep: {keep}: got 'a folder with other files'; "
        "expected an empty folder or a previous rehearsal's folder (choose another --keep)\n")
    assert untouched(keep)


def test_a_previous_rehearsals_folder_is_replaced_whole(tmp_path):
    keep = folders.REHEARSAL.replace(tmp_path / "keep")
    (keep / "rehearsal").mkdir()
    (keep / "rehearsal" / "broker.log").write_text("an earlier run")
    assert folders.REHEARSAL.replace(keep) == keep
    assert sorted(p.name for p in keep.iterdir()) == [".kafka-replication-rehearsal"]
    assert (keep / ".kafka-replication-rehearsal").read_text() == (
        "written by `python -m infra rehearse --keep`; the folder is replaced whole at each run\n")


def test_a_folder_replaced_between_the_check_and_the_write_is_refused_then(tmp_path):
    """`replace` checks again: a folder the user filled after the command's first check stays."""
    out = tmp_path / "out"
    folders.RENDER.check(out)
    mine(out)
    with pytest.raises(TopologyError, match="got 'a folder with other files'"):
        folders.RENDER.replace(out)
    assert untouched(out)
