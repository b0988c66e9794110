"""`rehearse` refuses before it starts anything: every problem `validate` finds (not only the
schema's), a `--keep` or `--plugin-path` folder it could not use, and a class the topology loads
by name that no jar provides. Proven with the starters replaced by
ones that fail the test: nothing runs here."""

from __future__ import annotations

import io
import zipfile
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
import yaml

from infra.__main__ import main
from infra.tools.rehearsal import apiserver, jars, plugins
from tests.support.stacks import doc_topology, render_topology


@pytest.fixture(autouse=True)
def nothing_starts(monkeypatch):
    def started(*_args, **_kwargs):
        raise AssertionError("rehearse started something")
    monkeypatch.setattr(apiserver, "start", started)
    monkeypatch.setattr(apiserver, "build", started)


def run(*argv: str) -> tuple[int, str]:
    err = io.StringIO()
    with redirect_stdout(io.StringIO()), redirect_stderr(err):
        code = main(["rehearse", *argv])
    return code, err.getvalue()


def test_what_only_the_plan_refuses_exits_2_before_anything_starts(tmp_path):
    t = doc_topology()
    t["operator"]["imagePullSecret"]["name"] = "source-us-west"
    path = tmp_path / "t.yaml"
    path.write_text(yaml.safe_dump(t))
    assert run(str(path)) == (2, (
        "error: the topology has 1 problem(s):\n  - namespace repl-us-west-us-east: Secret name: got 'source-us-west'; "
        "expected a name of its own: the program also writes Secret 'source-us-west' there (repl-us-west-us-east)\n"))


@pytest.mark.parametrize("keep", ["/etc/passwd/x", "/nonexistent/a/b", "/etc/passwd"])
def test_a_keep_folder_that_cannot_be_written_exits_2_before_anything_starts(tmp_path, keep):
    path = tmp_path / "t.yaml"
    path.write_text(yaml.safe_dump(doc_topology()))
    assert run(str(path), "--keep", keep) == (2, (
        "error: the command line has 1 problem(s):\n"
        f"  - --keep: (argument): got '{keep}'; expected a writable folder, or a new one in a writable folder\n"))


def test_what_the_rehearsal_cannot_honour_is_said_before_it_starts(tmp_path, capsys, monkeypatch):
    from infra.core.releases import Flavour, find
    from infra.tools.rehearsal.local import unhonoured
    t = doc_topology()  # CSM 1.2: Cloudera's Kafka 3.8.0.1.2, which is not published
    t["operator"]["connect"]["image"] = "registry.example/connect:1"
    t["flows"][0]["connect"] = {"resources": {"requests": {"cpu": "1"}}}
    release = find(Flavour.csm, "1.2")
    assert unhonoured(t, release) == [
        "operator.connect.image registry.example/connect:1: not run here; the workers run csm 1.2's jars "
        "(Apache Kafka 3.8.0)",
        "operator.connect.version 3.8.0.1.2: the workers run Apache Kafka 3.8.0 here (the release of its line)",
        "flows[0].connect.resources: not enforced here (each worker is one JVM with this machine's defaults)"]
    path = tmp_path / "t.yaml"
    path.write_text(yaml.safe_dump(t))
    monkeypatch.setenv("INFRA_DEBUG", "1")  # the stand-in starter's refusal raised, not reported
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    with pytest.raises(AssertionError, match="rehearse started something"):
        main(["rehearse", str(path)])
    # The run's temporary folder went with the run that failed to start (no --keep).
    assert list((tmp_path / "tmp").iterdir()) == []
    out = capsys.readouterr().out
    assert [line for line in out.splitlines() if line.startswith("not honoured here: ")] == [
        f"not honoured here: {line}" for line in unhonoured(t, release)]


# ------------------------------------------------------------------ classes no jar here provides

STAMP = "com.example.transforms.Stamp"


def _jar(path: Path, classes: list[str]) -> Path:
    """A jar listing `classes` (empty class files: the check reads the listing, no JVM runs)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as jar:
        jar.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\n")
        for name in classes:
            jar.writestr(name.replace(".", "/") + ".class", b"")
    return path


@pytest.fixture(autouse=True)
def release_jars(tmp_path_factory, monkeypatch):
    """The workers' classpath stood in for by one jar holding every class the documents'
    topology loads by name (the real jars come from Maven: the runtime tier reads them)."""
    folder = tmp_path_factory.mktemp("jars")
    wanted = {n.name for n in plugins.needs(render_topology(folder, doc_topology()).objects())}
    _jar(folder / "release.jar", sorted(wanted))
    monkeypatch.setattr(jars, "classpath", lambda release, kafka=None: f"{folder}/*")
    return folder


def _with_stamp(tmp_path: Path) -> Path:
    t = doc_topology()
    t["flows"][0]["transforms"] = [{"name": "Stamp", "type": STAMP, "keepsTopic": True}]
    path = tmp_path / "t.yaml"
    path.write_text(yaml.safe_dump(t))
    return path


def test_a_class_no_jar_provides_exits_2_with_its_flow_and_connector_before_anything_starts(tmp_path):
    assert run(str(_with_stamp(tmp_path))) == (2, (
        "error: the rehearsal has 1 problem(s):\n"
        "  - flow repl-us-west-us-east, connector repl-us-west-us-east-source: transforms.Stamp.type: got "
        f"'{STAMP}'; expected a class of the jars the workers run here for csm 1.2 (Apache Kafka's Connect and "
        "MirrorMaker 2, Strimzi's config providers) or of a --plugin-path folder (a jar, or a folder of jars, per "
        "plugin); or --allow-missing to rehearse the connectors that can run\n"))


def test_a_plugin_path_that_provides_it_lets_the_rehearsal_start(tmp_path, monkeypatch):
    """A plugin folder as Connect's plugin.path holds them: here a folder per plugin."""
    _jar(tmp_path / "plugins" / "stamp" / "lib" / "stamp-1.0.jar", [STAMP, STAMP + "$Inner"])
    monkeypatch.setenv("INFRA_DEBUG", "1")
    with pytest.raises(AssertionError, match="rehearse started something"):
        main(["rehearse", str(_with_stamp(tmp_path)), "--plugin-path", str(tmp_path / "plugins")])


def test_with_allow_missing_the_connector_is_named_and_the_others_start(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("INFRA_DEBUG", "1")
    with pytest.raises(AssertionError, match="rehearse started something"):
        main(["rehearse", str(_with_stamp(tmp_path)), "--allow-missing"])
    assert [line for line in capsys.readouterr().out.splitlines() if line.startswith("not run here: ")] == [
        f"not run here: repl-us-west-us-east-source: it loads {STAMP} (transforms.Stamp.type), which no jar here "
        "provides (--plugin-path adds a folder of plugins)"]


def test_a_plugin_path_that_is_no_readable_folder_exits_2(tmp_path):
    path = _with_stamp(tmp_path)
    (tmp_path / "a-file").write_text("")
    assert run(str(path), "--plugin-path", str(tmp_path / "nowhere"), "--plugin-path", str(tmp_path / "a-file")) == (
        2, "error: the command line has 2 problem(s):\n" + "".join(
            f"  - --plugin-path: (argument): got '{tmp_path / name}'; expected a readable folder of plugins, as "
            "Connect's plugin.path holds them: a jar, or a folder of jars, per plugin\n" for name in ("nowhere", "a-file")))


def test_a_rehearsal_cluster_has_one_port_or_is_refused(tmp_path):
    """A rehearsal's brokers listen on their bootstrap servers' one port, and so does a cluster's
    link's proxy (Rehearsal.start_clusters)."""
    from infra.tools.rehearsal.kafka import KafkaCluster
    from infra.tools.rehearsal.process import RuntimeStartError
    from infra.tools.rehearsal.process import Network
    from infra.topology.schema import Cluster
    one = KafkaCluster("a", Cluster(bootstrapServers="a-0:9093,a-1:9093"), None, tmp_path, Network(tmp_path))
    assert one.port == 9093
    two = KafkaCluster("b", Cluster(bootstrapServers="b-0:9092,b-1:9093"), None, tmp_path, Network(tmp_path))
    with pytest.raises(RuntimeStartError, match=r"^cluster b: its bootstrap servers use several ports \[9092, 9093\]; "
                                                r"a rehearsal's brokers listen on one port$"):
        two.port


@pytest.mark.parametrize("values, shown", [
    (["nowhere=50"], "nowhere=50"), (["us-west=50", "us-west=20"], "us-west=20"), (["us-west"], "us-west"),
    (["us-west=-5"], "us-west=-5"), (["us-west=10001"], "us-west=10001"), (["us-west=50@200000"], "us-west=50@200000"),
    (["us-west=50ms"], "us-west=50ms")])
def test_a_distance_that_cannot_be_made_exits_2_before_anything_starts(tmp_path, values, shown):
    path = tmp_path / "t.yaml"
    path.write_text(yaml.safe_dump(doc_topology()))
    assert run(str(path), *[a for v in values for a in ("--distance", v)]) == (2, (
        "error: the command line has 1 problem(s):\n"
        f"  - --distance: (argument): got '{shown}'; expected ALIAS=MS or ALIAS=MS@MBIT: a cluster of the topology "
        "(us-east, us-west) once, a round trip of 0 to 10000 ms, a rate of 0 to 100000 Mbit/s (0: none)\n"))


def test_a_distance_is_said_and_given_to_the_rehearsal(tmp_path, capsys, monkeypatch):
    from infra.tools.rehearsal import cli
    made = {}

    def rehearsal(*_args, **kwargs):
        made.update(kwargs["distances"])
        raise AssertionError("rehearse started something")
    monkeypatch.setattr(cli, "Rehearsal", rehearsal)
    monkeypatch.setattr(apiserver, "start", lambda *_: None)
    monkeypatch.setattr(apiserver, "apiserver_binary", lambda: Path("/bin/true"))
    monkeypatch.setattr(cli.distance, "available", lambda: None)
    monkeypatch.setenv("INFRA_DEBUG", "1")
    path = tmp_path / "t.yaml"
    path.write_text(yaml.safe_dump(doc_topology()))
    with pytest.raises(AssertionError, match="rehearse started something"):
        main(["rehearse", str(path), "--distance", "us-west=50@100", "--distance", "us-east=20.5"])
    assert {a: (d.rtt_ms, d.mbit) for a, d in made.items()} == {"us-west": (50, 100), "us-east": (20.5, 0)}
    assert [line for line in capsys.readouterr().out.splitlines() if line.startswith("at a distance: ")] == [
        "at a distance: us-east, 20.5 ms round trip, from everything else (the kernel's TCP through a delaying relay)",
        "at a distance: us-west, 50 ms round trip, 100 Mbit/s each way, from everything else (the kernel's TCP "
        "through a delaying relay)"]


def test_a_machine_that_cannot_make_a_link_exits_2_before_anything_starts(tmp_path, monkeypatch):
    from infra.tools.rehearsal import cli
    monkeypatch.setattr(cli.distance, "available", lambda: "a link at a distance needs root (network namespaces, TUN devices)")
    path = tmp_path / "t.yaml"
    path.write_text(yaml.safe_dump(doc_topology()))
    assert run(str(path), "--distance", "us-west=50") == (2, (
        "error: the command line has 1 problem(s):\n  - --distance: (argument): got 'us-west=50'; expected a machine "
        "that can make it: a link at a distance needs root (network namespaces, TUN devices)\n"))
