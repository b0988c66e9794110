"""The runtime tier's shared queue (tests/support/shared_queue.py), on a small suite of its own
run by real pytest processes: each test runs in exactly one of them, and fixtures shared by
several tests are set up and torn down as a single process would."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.shared_queue import QUEUE

ROOT = Path(__file__).resolve().parents[2]
SUITE = {
    "conftest.py": "from tests.support.shared_queue import pytest_runtestloop, pytest_terminal_summary\n",
    "test_a.py": '''
import os, pytest
LOG = os.environ["LOG"]
def note(text):
    with open(LOG, "a") as f:
        f.write(text + "\\n")
@pytest.fixture(scope="module")
def shared():
    note("setup a")
    yield
    note("teardown a")
@pytest.mark.parametrize("n", range(4))
def test_a(shared, n):
    note(f"a{n}")
''',
    "test_b.py": '''
from test_a import note
def test_b():
    note("b")
''',
}


def run(suite: Path, queue: Path, log: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, QUEUE: str(queue), "LOG": str(log), "PYTHONPATH": f"{ROOT}:{suite}"}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args, str(suite)],
                          cwd=suite, env=env, capture_output=True, text=True, timeout=120)


@pytest.fixture
def suite(tmp_path) -> Path:
    for name, text in SUITE.items():
        (tmp_path / "suite" / name).parent.mkdir(exist_ok=True)
        (tmp_path / "suite" / name).write_text(text)
    return tmp_path / "suite"


def test_each_test_runs_in_the_process_that_claimed_it(suite, tmp_path):
    queue, log = tmp_path / "queue", tmp_path / "log"
    queue.mkdir()
    for index in (1, 2, 4):  # claimed by another process: a1, a2 and b
        (queue / str(index)).touch()
    first = run(suite, queue, log)
    assert first.returncode == 0, first.stdout + first.stderr
    assert log.read_text().split("\n")[:-1] == ["setup a", "a0", "a3", "teardown a"]
    assert "2 passed" in first.stdout
    assert (f"shared queue {queue}: this process ran 2 of its 5 selected tests; another process ran the others"
            in first.stdout)
    assert sorted(int(p.name) for p in queue.iterdir()) == [0, 1, 2, 3, 4]

    # A second process finds every test claimed: it runs none, and does not fail for it.
    second = run(suite, queue, tmp_path / "log2")
    assert second.returncode == 0, second.stdout + second.stderr
    assert not (tmp_path / "log2").exists()
    assert "this process ran 0 of its 5 selected tests" in second.stdout


def test_without_the_queue_pytest_runs_everything_itself(suite, tmp_path):
    env = {k: v for k, v in os.environ.items() if k != QUEUE}
    env.update(LOG=str(tmp_path / "log"), PYTHONPATH=f"{ROOT}:{suite}")
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(suite)], cwd=suite,
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "log").read_text().split("\n")[:-1] == ["setup a", "a0", "a1", "a2", "a3", "teardown a", "b"]


def test_a_failure_in_a_claimed_test_fails_its_process(suite, tmp_path):
    (suite / "test_b.py").write_text("def test_b():\n    assert 1 == 2\n")
    queue = tmp_path / "queue"
    done = run(suite, queue, tmp_path / "log")
    assert done.returncode == 1 and "1 failed, 4 passed" in done.stdout, done.stdout


def test_a_module_claimed_together_runs_in_one_process(suite, tmp_path):
    """`CLAIM_TOGETHER`: whoever claims the module's first test runs them all, one claim file."""
    (suite / "test_a.py").write_text("CLAIM_TOGETHER = True\n" + (suite / "test_a.py").read_text())
    queue, log = tmp_path / "queue", tmp_path / "log"
    queue.mkdir()
    (queue / "0").touch()  # another process claimed a0, and with it a1-a3
    first = run(suite, queue, log)
    assert first.returncode == 0, first.stdout + first.stderr
    assert log.read_text().split("\n")[:-1] == ["b"]
    assert "this process ran 1 of its 5 selected tests" in first.stdout
    assert sorted(int(p.name) for p in queue.iterdir()) == [0, 4]

    fresh = tmp_path / "fresh"
    second = run(suite, fresh, tmp_path / "log2")
    assert second.returncode == 0, second.stdout + second.stderr
    assert (tmp_path / "log2").read_text().split("\n")[:-1] == ["setup a", "a0", "a1", "a2", "a3", "teardown a", "b"]
    assert sorted(int(p.name) for p in fresh.iterdir()) == [0, 4]



# Tests that wait until both processes are up, note their start, then wait until another test
# runs beside them (its start noted, its end not) or 2 s have passed, then note their end: run
# side by side they overlap; one at a time they cannot.
OVERLAPPING = '''
import os, time, pytest
LOG = os.environ["LOG"]
def note(text):
    with open(LOG, "a") as f:
        f.write(text + "\\n")
def running():
    text = open(LOG).read()
    return text.count("start") - text.count("end")
MARK
@pytest.mark.parametrize("n", range(4))
def test_h(n):
    deadline = time.monotonic() + 60
    while open(LOG).read().count("up") < 2 and time.monotonic() < deadline:
        time.sleep(0.05)  # both processes started (and claimed their tests): a loaded machine starts them late
    note(f"start {n}")
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline and running() < 2:
        time.sleep(0.05)
    note(f"end {n}")
'''


@pytest.mark.parametrize("marked", [True, False], ids=["heavy", "unmarked"])
def test_heavy_tests_of_two_processes_run_one_at_a_time(tmp_path, marked):
    """`heavy`: two processes sharing four heavy tests run them one at a time, never two side by
    side; unmarked, the same tests overlap (so the test can fail)."""
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "conftest.py").write_text(SUITE["conftest.py"] + "import os\n\n\ndef pytest_sessionstart(session):\n"
                                       "    with open(os.environ['LOG'], 'a') as f:\n        f.write('up\\n')\n")
    (suite / "test_h.py").write_text(OVERLAPPING.replace("MARK", "@pytest.mark.heavy" if marked else ""))
    (suite / "pytest.ini").write_text("[pytest]\nmarkers =\n    heavy: one at a time\n")
    queue, log = tmp_path / "queue", tmp_path / "log"
    env = {**os.environ, QUEUE: str(queue), "LOG": str(log), "PYTHONPATH": f"{ROOT}:{suite}"}
    both = [subprocess.Popen([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(suite)], cwd=suite,
                             env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for _ in range(2)]
    outputs = [p.communicate(timeout=120)[0] for p in both]
    assert [p.returncode for p in both] == [0, 0], outputs
    assert sum(int(n) for o in outputs for n in re.findall(r"this process ran (\d) of its 4", o)) == 4, outputs
    side_by_side, most = 0, 0
    for line in log.read_text().splitlines():
        side_by_side += {"up": 0, "start": 1, "end": -1}[line.split()[0]]
        most = max(most, side_by_side)
    assert most == (1 if marked else 2), log.read_text()
