"""No silent skip (tests/support/skips.py): a planted skip fails a pytest run, an allowed one does
not, and the allow-list itself is well formed, every entry with its reason."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.support import skips
from tests.support.stacks import ROOT

PLANTED = {
    "test_call.py": "import pytest\n\ndef test_planted():\n    pytest.skip('planted in the call')\n",
    "test_mark.py": "import pytest\n\n@pytest.mark.skipif(True, reason='planted as a mark')\ndef test_marked():\n    pass\n",
    "test_fixture.py": "import pytest\n\n@pytest.fixture\ndef gone():\n    pytest.skip('planted in a fixture')\n\n"
                       "def test_needs(gone):\n    pass\n",
    "test_xfail.py": "import pytest\n\n@pytest.mark.xfail(reason='planted xfail')\ndef test_expected():\n    assert False\n",
    "test_xpass.py": "import pytest\n\n@pytest.mark.xfail(reason='planted xpass')\ndef test_passes():\n    pass\n",
    "test_module.py": "import pytest\n\npytest.skip('planted for the module', allow_module_level=True)\n\n"
                      "def test_never_collected():\n    pass\n",
    "test_fine.py": "def test_runs():\n    assert True\n",
}


def run_planted(tmp_path: Path, allow: str, files: dict[str, str]) -> subprocess.CompletedProcess:
    """A pytest session of its own on `files`, with the guard registered as tests/conftest.py
    registers it, over the allow-list text `allow`."""
    (tmp_path / "skips.toml").write_text(allow)
    (tmp_path / "conftest.py").write_text(textwrap.dedent(f"""\
        from pathlib import Path
        from tests.support.skips import SkipGuard

        def pytest_configure(config):
            config.pluginmanager.register(SkipGuard(Path({str(tmp_path / 'skips.toml')!r})), "skip-guard")
        """))
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", str(tmp_path),
                           str(tmp_path)], capture_output=True, text=True, env=env, timeout=120, cwd=tmp_path)


def test_every_kind_of_planted_skip_fails_the_run_and_is_named(tmp_path):
    proc = run_planted(tmp_path, "", PLANTED)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    start = lines.index(next(line for line in lines if "unlisted skips" in line))
    listed = lines[start + 1:start + 8]
    assert listed[0] == (f"6 test(s) skipped that {tmp_path / 'skips.toml'} does not allow: make them run here, "
                         "or list them there with the reason (reviewed like code)")
    assert sorted(listed[1:]) == ["  test_call.py::test_planted: planted in the call",
                                  "  test_fixture.py::test_needs: planted in a fixture",
                                  "  test_mark.py::test_marked: planted as a mark",
                                  "  test_module.py: planted for the module",
                                  "  test_xfail.py::test_expected: xfail: planted xfail",
                                  "  test_xpass.py::test_passes: xpass: planted xpass"]
    assert "1 passed, 4 skipped, 1 xfailed, 1 xpassed" in lines[-1]


def test_a_listed_skip_passes_and_an_unlisted_one_still_fails(tmp_path):
    allow = ('[[skip]]\ntest = "test_call.py::test_*"\n'
             'reason = "a reason of more than five words, for the test"\n')
    proc = run_planted(tmp_path, allow, {k: PLANTED[k] for k in ("test_call.py", "test_fine.py")})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "unlisted skips" not in proc.stdout
    proc = run_planted(tmp_path, allow, {"test_mark.py": PLANTED["test_mark.py"]})
    assert proc.returncode == 1
    assert "  test_mark.py::test_marked: planted as a mark" in proc.stdout.splitlines()


def test_a_missing_tool_may_skip_outside_ci_only(tmp_path, monkeypatch):
    planted = {"test_tool.py": "import pytest\n\ndef test_needs_a_tool():\n"
                               f"    pytest.skip({skips.UNAVAILABLE!r} + 'no kube-apiserver binary')\n"}
    monkeypatch.setenv("APISERVER_REQUIRED", "0")
    assert run_planted(tmp_path, "", planted).returncode == 0
    monkeypatch.setenv("APISERVER_REQUIRED", "1")
    proc = run_planted(tmp_path, "", planted)
    assert proc.returncode == 1
    assert "  test_tool.py::test_needs_a_tool: unavailable here: no kube-apiserver binary" in proc.stdout.splitlines()


def test_a_run_that_failed_keeps_its_own_status(tmp_path):
    proc = run_planted(tmp_path, "", {"test_bad.py": "def test_bad():\n    assert False\n",
                                      "test_call.py": PLANTED["test_call.py"]})
    assert proc.returncode == 1
    assert "test_call.py::test_planted: planted in the call" in proc.stdout


@pytest.mark.parametrize("text,what", [
    ('[[skip]]\ntest = "x"\n', "{'test': 'x'}"),
    ('[[skip]]\ntest = "x"\nreason = "too short"\n', "{'test': 'x', 'reason': 'too short'}"),
    ('[[skip]]\ntest = "x"\nreason = "a reason of more than five words"\nextra = 1\n', "'extra': 1"),
])
def test_a_malformed_allow_list_is_refused(tmp_path, text, what):
    path = tmp_path / "skips.toml"
    path.write_text(text)
    with pytest.raises(ValueError) as exc:
        skips.allow_list(path)
    assert str(exc.value).startswith(f"{path}: skip entry 1 (")
    assert what in str(exc.value)
    assert str(exc.value).endswith("expected exactly `test` (a test id pattern) and `reason` (a sentence saying why, "
                                   "and where its proof lives)")


def test_the_repository_allow_list_and_the_guard_in_this_session(request):
    entries = skips.allow_list()
    assert [e.test for e in entries] == ["tests/runtime/test_alert_recordings.py::test_record[[]*]"]
    assert skips.unlisted([("tests/runtime/test_alert_recordings.py::test_record[strimzi-1.2.0-worker-down]", "r"),
                           ("tests/runtime/test_alert_recordings.py::test_every_scenario_has_its_verdict", "r")],
                          entries) == [("tests/runtime/test_alert_recordings.py::test_every_scenario_has_its_verdict",
                                        "r")]
    # tests/conftest.py registers it for every tier: each tests/<tier>/ folder is below it.
    assert isinstance(request.config.pluginmanager.get_plugin("skip-guard"), skips.SkipGuard)
