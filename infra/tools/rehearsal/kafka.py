"""One single-node KRaft Kafka cluster per alias, on loopback, with the security its topology
entry declares: PLAINTEXT, SASL (PLAIN or SCRAM-SHA-256/512) over plaintext or TLS, TLS with
client certificates. The broker listens on the topology's own host names and port (through the
hosts file of process.Network) and presents a certificate of the cluster's CA for them.

Besides the listener the topology names, the broker has a plaintext replication listener and its
controller on the same loopback address: neither is a client's concern. A cluster `far` away runs
in a network namespace reached through a link with a round trip (distance.py).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from pathlib import Path

from contract.clientprops import LOGIN_MODULES, jaas_config
from infra.tools.rehearsal import material as materials
from infra.tools.rehearsal.distance import Distance
from infra.tools.rehearsal.process import (Network, Process, RuntimeStartError, class_archive, free_port, java,
                                           jvm_options, listening, logging_options)
from infra.topology.schema import Cluster, Protocol


@dataclass
class KafkaCluster:
    alias: str
    spec: Cluster
    password: str | None  # the SASL user's, when the cluster uses SASL
    directory: Path
    network: Network
    ip: str = ""
    # Kafka's StandardAuthorizer, where a rehearsal needs ACLs: everyone allowed where no ACL
    # names a resource, and the principals the rehearsal connects as (its SASL user, the client
    # certificate, the unauthenticated listeners) super users, so that only ACLs a test writes
    # restrict anyone.
    authorizer: bool = False
    # Seconds after which a SASL connection must authenticate again (connections.max.reauth.ms,
    # KIP-368), where a rehearsal rotates credentials: a client still holding a rotated-away
    # password then fails within that time instead of at its next reconnect.
    reauthenticate_seconds: int | None = None
    # CA certificates (PEM) whose client certificates the broker accepts beside its own CA's: a
    # rotation's window, in which clients move to certificates of the new CA.
    client_cas: str = ""
    # The broker accepts client certificates of `client_cas` alone, no longer of its own CA: the
    # end of the clients' move to certificates of another CA, where a client that kept its old
    # certificate is refused at its next handshake.
    client_cas_only: bool = False
    material: materials.ClusterMaterial = field(init=False)
    process: Process | None = None
    classpath: str = ""  # of the Kafka it last started on (a drill's upgrade starts it on another)
    jvm: str = "quick"  # process.jvm_options
    # A cluster in another region (distance.py): its broker runs in the far namespace of this
    # link, on the link's far address, and every connection to it from here crosses the link.
    far: Distance | None = None

    def __post_init__(self) -> None:
        self.material = materials.for_cluster(self.alias, tuple(h for h, _ in self.hosts))

    @property
    def hosts(self) -> list[tuple[str, int]]:
        out = []
        for server in self.spec.bootstrapServers.split(","):
            host, _, port = server.strip().rpartition(":")
            out.append((host, int(port)))
        return out

    @property
    def port(self) -> int:
        """The one port of the cluster's bootstrap servers, where its one broker listens."""
        ports = {p for _, p in self.hosts}
        if len(ports) != 1:
            raise RuntimeStartError(f"cluster {self.alias}: its bootstrap servers use several ports {sorted(ports)}; "
                                    "a rehearsal runs one broker per cluster, on one port")
        (port,) = ports
        return port

    @property
    def protocol(self) -> Protocol:
        return self.spec.security.protocol

    @property
    def bootstrap(self) -> str:
        return self.spec.bootstrapServers

    def _server_properties(self, port: int, controller: int, replication: int) -> dict[str, str]:
        host = self.hosts[0][0]
        props = {
            "process.roles": "broker,controller", "node.id": "1",
            "controller.quorum.voters": f"1@{self.ip}:{controller}",
            "controller.listener.names": "CONTROLLER", "inter.broker.listener.name": "REPLICATION",
            "listeners": f"CLIENTS://{self.ip}:{port},REPLICATION://{self.ip}:{replication},"
                         f"CONTROLLER://{self.ip}:{controller}",
            "advertised.listeners": f"CLIENTS://{host}:{port},REPLICATION://{self.ip}:{replication}",
            "listener.security.protocol.map": f"CLIENTS:{self.protocol.value},REPLICATION:PLAINTEXT,"
                                              "CONTROLLER:PLAINTEXT",
            "log.dirs": str(self.directory / "data"),
            "num.partitions": "1", "auto.create.topics.enable": "false",
            "offsets.topic.replication.factor": "1", "offsets.topic.num.partitions": "5",
            "transaction.state.log.replication.factor": "1", "transaction.state.log.min.isr": "1",
            "transaction.state.log.num.partitions": "5",
            "group.initial.rebalance.delay.ms": "0", "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            # The controller's no-op records (KIP-835, every 500 ms by default) keep the metadata
            # log's high watermark moving for brokers elsewhere; this one-node cluster has none,
            # and they were half of an idle broker's CPU (1.46 s a minute against 0.70 s at 10 s,
            # measured here), with dozens of brokers idling beside the tests' work on two cores.
            "metadata.max.idle.interval.ms": "10000",
        }
        sasl = self.spec.security.sasl
        if sasl is not None:
            mech = sasl.mechanism.value
            props["sasl.enabled.mechanisms"] = mech
            props["sasl.mechanism.inter.broker.protocol"] = mech
            if mech == "PLAIN":
                entry = f'{LOGIN_MODULES[mech]} required user_{sasl.username}="{self.password}";'
            else:
                entry = f"{LOGIN_MODULES[mech]} required;"
            props[f"listener.name.clients.{mech.lower()}.sasl.jaas.config"] = entry
        if self.reauthenticate_seconds is not None:
            props["connections.max.reauth.ms"] = str(self.reauthenticate_seconds * 1000)
        if self.authorizer:
            users = ["User:ANONYMOUS", *([f"User:{sasl.username}"] if sasl is not None else []),
                     f"User:CN={self.alias}-client"]
            props.update({"authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                          "allow.everyone.if.no.acl.found": "true", "super.users": ";".join(users)})
        tls = self.spec.security.effective_tls
        if tls is not None:
            keystore = self.directory / "broker.pem"
            keystore.write_text(self.material.server_key_pem + self.material.server_cert_pem)
            trust = self.directory / "ca.pem"
            trust.write_text(("" if self.client_cas_only else self.material.ca_pem) + self.client_cas)
            props.update({"ssl.keystore.type": "PEM", "ssl.keystore.location": str(keystore),
                          "ssl.truststore.type": "PEM", "ssl.truststore.location": str(trust)})
            if tls.clientCertificate:
                props["ssl.client.auth"] = "required"
        return props

    def start(self, release_classpath: str) -> None:
        self.classpath = release_classpath
        self.directory.mkdir(parents=True, exist_ok=True)
        self.ip = self.ip or (self.far.far_ip if self.far is not None else self.network.address())
        for host, _ in self.hosts:
            self.network.map(host, self.ip)
        port = self.port
        config = self.directory / "server.properties"
        # The far namespace holds this broker alone: the ports after its own are free there (and
        # cannot be probed from here, where its address is not local).
        others = (port + 1, port + 2) if self.far is not None else (free_port(self.ip), free_port(self.ip))
        props = self._server_properties(port, *others)
        config.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        logs = logging_options(self.directory, "WARN")
        base = [java(), *jvm_options(self.jvm, (128, 384)),
                *self.network.java_options(), *logs, "-cp", release_classpath]
        fmt = [*base, "kafka.tools.StorageTool", "format", "-t", str(uuid.uuid4()), "-c", str(config),
               "--ignore-formatted"]
        sasl = self.spec.security.sasl
        if sasl is not None and sasl.mechanism.value.startswith("SCRAM"):
            fmt += ["--add-scram", f"{sasl.mechanism.value}=[name={sasl.username},password={self.password}]"]
        # A broker started again (a drill brings a lost cluster back) keeps its storage and cluster id.
        if not (self.directory / "data" / "meta.properties").exists():
            archived, archive = class_archive(fmt)
            formatter = Process(f"kafka-storage format ({self.alias})", archived, self.directory / "format.log",
                                archive=archive)
            code = formatter.wait(120)
            if code != 0 and archive is not None and archive.staged is not None:
                # The JVM exits 1 when its archive cannot be written (a full or read-only cache):
                # the formatting is done again without one, so that the archive never decides.
                formatter = Process(f"kafka-storage format ({self.alias})", fmt, self.directory / "format.log")
                code = formatter.wait(120)
            if code != 0:
                raise RuntimeStartError(f"formatting {self.alias}'s storage failed:\n{formatter.tail()}")
        argv, archive = class_archive([*base, "kafka.Kafka", str(config)])
        if self.far is not None:
            argv = [*self.far.prefix(), *argv]  # `ip netns exec` execs the JVM: the pid stays the broker's
        self.process = Process(f"Kafka broker {self.alias}", argv, self.directory / "broker.log", archive=archive)
        self.process.wait_for(f"listener {self.ip}:{port}", lambda: listening(self.ip, port), 120)

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()

    def client_properties(self) -> dict[str, str]:
        """A client of this cluster with its SASL user or its client certificate: PEM trust."""
        props = {"bootstrap.servers": self.bootstrap, "security.protocol": self.protocol.value}
        sasl = self.spec.security.sasl
        if sasl is not None and self.password is not None:
            props["sasl.mechanism"] = sasl.mechanism.value
            props["sasl.jaas.config"] = jaas_config(sasl.mechanism.value, sasl.username, self.password)
        tls = self.spec.security.effective_tls
        if tls is not None:
            props["ssl.truststore.type"] = "PEM"
            props["ssl.truststore.certificates"] = self.material.ca_pem
            if tls.clientCertificate:
                props["ssl.keystore.type"] = "PEM"
                props["ssl.keystore.certificate.chain"] = self.material.client_cert_pem
                props["ssl.keystore.key"] = self.material.client_key_pem
        return props
