"""Class-data sharing for the rehearsal's JVMs (infra/tools/rehearsal/process.py class_archive):
the first JVM of a kind dumps its classes at its exit, later ones map them, and an archive that
does not fit the JVM costs the saving, never the start. The JDK is the oracle: `-Xshare:on`
refuses to start on an archive it cannot map."""

from __future__ import annotations

import subprocess
import zipfile
from pathlib import Path

from infra.tools.rehearsal import process
from infra.tools.rehearsal.process import ClassArchive, class_archive, java

HELLO = "public class Hello { public static void main(String[] a) { System.out.println(\"hello \" + a.length); } }\n"


def hello_jar(tmp_path: Path, name: str = "hello.jar") -> Path:
    src = tmp_path / "Hello.java"
    src.write_text(HELLO)
    subprocess.run([str(Path(java()).with_name("javac")), "-d", str(tmp_path / "classes"), str(src)], check=True,
                   timeout=120)
    jar = tmp_path / name
    with zipfile.ZipFile(jar, "w") as out:
        out.write(tmp_path / "classes" / "Hello.class", "Hello.class")
    return jar


def run(argv: list[str], archive: ClassArchive | None) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    if archive is not None:
        archive.settle(done.returncode)
    return done


def test_the_first_jvm_dumps_the_next_maps_and_the_jdk_accepts_the_archive(tmp_path, cds_cache):
    jar = hello_jar(tmp_path)
    base = [java(), "-Xmx64m", "-XX:+UseSerialGC", "-Dlog.dir=/somewhere", "-cp", str(jar), "Hello", "x"]
    argv, first = class_archive(base)
    assert first is not None and first.staged is not None and first.final.parent == cds_cache
    assert argv == [java(), f"-XX:ArchiveClassesAtExit={first.staged}", "-Xlog:cds=off", "-Xlog:cds+dynamic=off",
                    *base[1:]]
    done = run(argv, first)
    assert (done.returncode, done.stdout) == (0, "hello 1\n")
    assert first.final.is_file() and not first.staged.exists()
    # Another rehearsal's JVM: other -D values and arguments, the same java, classpath, main and VM.
    argv, second = class_archive([java(), "-Xmx64m", "-XX:+UseSerialGC", "-Dlog.dir=/elsewhere", "-cp", str(jar),
                                  "Hello"])
    assert second == ClassArchive(first.final, None, False)
    assert argv[1:4] == [f"-XX:SharedArchiveFile={first.final}", "-Xlog:cds=off", "-Xlog:cds+dynamic=off"]
    assert run(argv, second).stdout == "hello 0\n"
    # The JDK maps it: -Xshare:on refuses to start on an archive it cannot use.
    strict = run([java(), "-Xshare:on", f"-XX:SharedArchiveFile={first.final}", "-Xmx64m", "-XX:+UseSerialGC",
                  "-cp", str(jar), "Hello"], None)
    assert (strict.returncode, strict.stdout) == (0, "hello 0\n"), strict.stdout + strict.stderr


def test_an_archive_that_does_not_fit_costs_the_saving_not_the_start(tmp_path, cds_cache):
    jar = hello_jar(tmp_path)
    argv, first = class_archive([java(), "-Xmx64m", "-cp", str(jar), "Hello"])
    run(argv, first)
    assert first is not None and first.final.is_file()
    other = tmp_path / "other"
    other.mkdir()
    moved = hello_jar(other, "moved.jar")  # another classpath: the archive's check fails
    strict = run([java(), "-Xshare:on", f"-XX:SharedArchiveFile={first.final}", "-Xmx64m", "-cp", str(moved),
                  "Hello"], None)
    assert (strict.returncode, strict.stdout, "shared class paths mismatch" in strict.stderr) == (
        1, "Error occurred during initialization of VM\nUnable to use shared archive.\n", True), strict.stderr
    # ...the JDK would not map it...
    relaxed = run([java(), f"-XX:SharedArchiveFile={first.final}", *process.CDS_QUIET, "-Xmx64m", "-cp", str(moved),
                   "Hello"], None)
    assert (relaxed.returncode, relaxed.stdout) == (0, "hello 0\n")  # ...and runs without it, silently


def test_a_jvm_killed_leaves_no_archive_and_keys_tell_kinds_apart(tmp_path, cds_cache):
    jar = hello_jar(tmp_path)
    _, archive = class_archive([java(), "-cp", str(jar), "Hello"])
    assert archive is not None and archive.staged is not None
    archive.staged.write_bytes(b"half an archive")
    archive.settle(-9)
    assert not archive.staged.exists() and not archive.final.exists()
    finals = {class_archive([java(), *vm, "-cp", cp, main])[1].final.name  # type: ignore[union-attr]
              for vm, cp, main in [([], str(jar), "Hello"), (["-Xmx64m"], str(jar), "Hello"),
                                   ([], str(jar) + ":" + str(jar), "Hello"), ([], str(jar), "pkg.Hello"),
                                   (["-javaagent:/a.jar=127.0.0.2:9404:/x"], str(jar), "Hello")]}
    assert len(finals) == 5
    agent1 = class_archive([java(), "-javaagent:/a.jar=127.0.0.2:9404:/x", "-cp", str(jar), "Hello"])[1]
    agent2 = class_archive([java(), "-javaagent:/a.jar=127.0.0.3:9404:/x", "-cp", str(jar), "Hello"])[1]
    assert agent1 is not None and agent2 is not None and agent1.final == agent2.final and agent1.agent
    assert agent1.options()[:2] == ["-XX:+UnlockDiagnosticVMOptions", "-XX:+AllowArchivingWithJavaAgent"]


def test_switched_off(tmp_path, cds_cache, monkeypatch):
    monkeypatch.setenv("KAFKA_REPLICATION_CDS", "0")
    argv = [java(), "-cp", "x.jar", "Hello"]
    assert class_archive(argv) == (argv, None)
    assert class_archive([java(), "-version"]) == ([java(), "-version"], None)


def test_a_jvm_with_an_agent_dumps_and_maps_its_archive(tmp_path, cds_cache):
    # The Connect workers run the metrics exporter as a Java agent: their archive is written with
    # AllowArchivingWithJavaAgent, which the JDK then requires of every JVM that maps it.
    jar = hello_jar(tmp_path)
    (tmp_path / "Agent.java").write_text("public class Agent { public static void premain(String a) {} }\n")
    subprocess.run([str(Path(java()).with_name("javac")), "-d", str(tmp_path / "agent"), str(tmp_path / "Agent.java")],
                   check=True, timeout=120)
    agent = tmp_path / "agent.jar"
    with zipfile.ZipFile(agent, "w") as out:
        out.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\nPremain-Class: Agent\n")
        out.write(tmp_path / "agent" / "Agent.class", "Agent.class")
    line = [java(), f"-javaagent:{agent}=127.0.0.9:9404", "-Xmx64m", "-cp", str(jar), "Hello"]
    argv, first = class_archive(line)
    assert first is not None and first.agent and first.staged is not None
    assert (run(argv, first).returncode, first.final.is_file()) == (0, True)
    argv, second = class_archive([*line[:1], f"-javaagent:{agent}=127.0.0.10:9404", *line[2:]])
    assert second is not None and second.staged is None
    assert argv[1:4] == ["-XX:+UnlockDiagnosticVMOptions", "-XX:+AllowArchivingWithJavaAgent",
                         f"-XX:SharedArchiveFile={first.final}"]
    strict = run([argv[0], "-Xshare:on", *argv[1:]], None)  # the JDK maps it, or refuses to start
    assert (strict.returncode, strict.stdout) == (0, "hello 0\n"), strict.stdout + strict.stderr
