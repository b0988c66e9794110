"""One KRaft Kafka cluster per alias, on loopback, with the security its topology entry declares:
PLAINTEXT, SASL (PLAIN or SCRAM-SHA-256/512) over plaintext or TLS, TLS with client certificates.
One broker, on every host name of the cluster's bootstrap servers; or, where a drill moves
partition leaders between brokers, several (`brokers`: each node a broker and a voter of the
controller quorum), each on its own host name of them. A broker listens on the cluster's one port
(its host names mapped to its loopback address by the hosts file of process.Network) and presents
a certificate of the cluster's CA for the cluster's host names.

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
from infra.tools.rehearsal.process import (Network, Process, RuntimeStartError, class_archive, free_ports, java,
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
    # Brokers (KRaft nodes, each a broker and a controller): one, or one per host of the bootstrap
    # servers (Rehearsal.brokers).
    brokers: int = 1
    # Every broker's, by node (node.id is the index plus one), and the address each listens on.
    processes: list[Process | None] = field(default_factory=list)
    ips: list[str] = field(default_factory=list)
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
        """The one port of the cluster's bootstrap servers, where each of its brokers listens."""
        ports = {p for _, p in self.hosts}
        if len(ports) != 1:
            raise RuntimeStartError(f"cluster {self.alias}: its bootstrap servers use several ports {sorted(ports)}; "
                                    "a rehearsal's brokers listen on one port")
        (port,) = ports
        return port

    def _node_of_host(self, index: int) -> int:
        """The node whose address the `index`th bootstrap host names: the one broker's, or its own."""
        return 0 if self.brokers == 1 else index

    def node_directory(self, node: int) -> Path:
        # The first node's where a one-node cluster has always kept its files.
        return self.directory if node == 0 else self.directory / f"node-{node + 1}"

    @property
    def protocol(self) -> Protocol:
        return self.spec.security.protocol

    @property
    def bootstrap(self) -> str:
        return self.spec.bootstrapServers

    def _server_properties(self, port: int, ports: list[tuple[int, int]], node: int = 0) -> dict[str, str]:
        """Node `node`'s configuration; `ports` the (controller, replication) ports of every node."""
        # A one-node cluster advertises its first host name: every one of them leads to it.
        host, ip, (controller, replication) = self.hosts[node][0], self.ips[node], ports[node]
        voters = ",".join(f"{n + 1}@{self.ips[n]}:{c}" for n, (c, _) in enumerate(ports))
        # Each internal topic on every broker, so that one broker may stop; a record acknowledged
        # by two of them (min.insync.replicas, what a production cluster of three sets).
        replicas, isr = str(self.brokers), str(min(self.brokers, 2))
        props = {
            "process.roles": "broker,controller", "node.id": str(node + 1),
            "controller.quorum.voters": voters,
            "controller.listener.names": "CONTROLLER", "inter.broker.listener.name": "REPLICATION",
            "listeners": f"CLIENTS://{ip}:{port},REPLICATION://{ip}:{replication},CONTROLLER://{ip}:{controller}",
            "advertised.listeners": f"CLIENTS://{host}:{port},REPLICATION://{ip}:{replication}",
            "listener.security.protocol.map": f"CLIENTS:{self.protocol.value},REPLICATION:PLAINTEXT,"
                                              "CONTROLLER:PLAINTEXT",
            "log.dirs": str(self.node_directory(node) / "data"),
            "num.partitions": "1", "auto.create.topics.enable": "false",
            "offsets.topic.replication.factor": replicas, "offsets.topic.num.partitions": "5",
            "transaction.state.log.replication.factor": replicas, "transaction.state.log.min.isr": isr,
            "transaction.state.log.num.partitions": "5",
            "group.initial.rebalance.delay.ms": "0", "share.coordinator.state.topic.replication.factor": replicas,
            "share.coordinator.state.topic.min.isr": isr,
            # The controller's no-op records (KIP-835, every 500 ms by default) keep the metadata
            # log's high watermark moving for brokers elsewhere; a one-node cluster has none,
            # and they were half of an idle broker's CPU (1.46 s a minute against 0.70 s at 10 s,
            # measured here), with dozens of brokers idling beside the tests' work on two cores.
            "metadata.max.idle.interval.ms": "10000",
        }
        if self.brokers > 1:
            # Topics created without a replication factor (Connect's own, the remote topics:
            # -1 in the render) on every broker; a broker back from a restart is made the
            # preferred leader of its partitions again within seconds, not Kafka's 300.
            props.update({"default.replication.factor": replicas, "min.insync.replicas": isr,
                          "leader.imbalance.check.interval.seconds": "5"})
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
            keystore = self.node_directory(node) / "broker.pem"
            keystore.write_text(self.material.server_key_pem + self.material.server_cert_pem)
            trust = self.node_directory(node) / "ca.pem"
            trust.write_text(("" if self.client_cas_only else self.material.ca_pem) + self.client_cas)
            props.update({"ssl.keystore.type": "PEM", "ssl.keystore.location": str(keystore),
                          "ssl.truststore.type": "PEM", "ssl.truststore.location": str(trust)})
            if tls.clientCertificate:
                props["ssl.client.auth"] = "required"
        return props

    def start(self, release_classpath: str) -> None:
        """Every broker of the cluster (again, after stop(): its storage, cluster id and addresses kept)."""
        if self.brokers > 1:
            if self.far is not None:
                raise RuntimeStartError(f"cluster {self.alias}: a cluster at a distance runs one broker, not "
                                        f"{self.brokers}")
            if len({h for h, _ in self.hosts}) != self.brokers or len(self.hosts) != self.brokers:
                raise RuntimeStartError(f"cluster {self.alias}: {self.brokers} brokers need as many host names in "
                                        f"its bootstrap servers, one each ({self.bootstrap})")
        self.classpath = release_classpath
        self.ip = self.ip or (self.far.far_ip if self.far is not None else self.network.address())
        self.ips = self.ips or [self.ip, *(self.network.address() for _ in range(self.brokers - 1))]
        for index, (host, _) in enumerate(self.hosts):
            self.network.map(host, self.ips[self._node_of_host(index)])
        port = self.port
        # The far namespace holds this broker alone: the ports after its own are free there (and
        # cannot be probed from here, where its address is not local).
        ports = ([(port + 1, port + 2)] if self.far is not None
                 else [(c, r) for c, r in (free_ports(ip, 2) for ip in self.ips)])
        cluster_id = str(uuid.uuid4())  # one for every node (the formatted keep theirs)
        for node in range(self.brokers):
            self.node_directory(node).mkdir(parents=True, exist_ok=True)
            config = self.node_directory(node) / "server.properties"
            config.write_text("".join(f"{k}={v}\n" for k, v in self._server_properties(port, ports, node).items()))
            self._format(node, cluster_id)
        # Every node before any wait: a broker of several opens its listener once a majority of
        # the controller quorum has formed.
        self.processes = [None] * self.brokers
        for node in range(self.brokers):
            self._launch(node)
        for node in range(self.brokers):
            self._wait(node)

    def _base(self, node: int) -> list[str]:
        logs = logging_options(self.node_directory(node), "WARN")
        return [java(), *jvm_options(self.jvm, (128, 384)), *self.network.java_options(), *logs, "-cp", self.classpath]

    def _format(self, node: int, cluster_id: str) -> None:
        directory = self.node_directory(node)
        # A broker started again (a drill brings a lost cluster back) keeps its storage and cluster id.
        if (directory / "data" / "meta.properties").exists():
            return
        fmt = [*self._base(node), "kafka.tools.StorageTool", "format", "-t", cluster_id, "-c",
               str(directory / "server.properties"), "--ignore-formatted"]
        sasl = self.spec.security.sasl
        if sasl is not None and sasl.mechanism.value.startswith("SCRAM"):
            fmt += ["--add-scram", f"{sasl.mechanism.value}=[name={sasl.username},password={self.password}]"]
        archived, archive = class_archive(fmt)
        formatter = Process(f"kafka-storage format ({self.alias})", archived, directory / "format.log", archive=archive)
        code = formatter.wait(120)
        if code != 0 and archive is not None and archive.staged is not None:
            # The JVM exits 1 when its archive cannot be written (a full or read-only cache):
            # the formatting is done again without one, so that the archive never decides.
            formatter = Process(f"kafka-storage format ({self.alias})", fmt, directory / "format.log")
            code = formatter.wait(120)
        if code != 0:
            raise RuntimeStartError(f"formatting {self.alias}'s storage failed:\n{formatter.tail()}")

    def _launch(self, node: int) -> None:
        directory = self.node_directory(node)
        argv, archive = class_archive([*self._base(node), "kafka.Kafka", str(directory / "server.properties")])
        if self.far is not None:
            argv = [*self.far.prefix(), *argv]  # `ip netns exec` execs the JVM: the pid stays the broker's
        name = f"Kafka broker {self.alias}" + (f" (node {node + 1})" if self.brokers > 1 else "")
        self.processes[node] = Process(name, argv, directory / "broker.log", archive=archive)

    @property
    def process(self) -> Process | None:
        """The first broker's (the only one of a one-node cluster)."""
        return self.processes[0] if self.processes else None

    def _wait(self, node: int) -> None:
        process, ip = self.processes[node], self.ips[node]
        assert process is not None, node
        process.wait_for(f"listener {ip}:{self.port}", lambda: listening(ip, self.port), 120)

    def stop(self) -> None:
        for process in self.processes:
            if process is not None:
                process.stop()

    def stop_node(self, node: int) -> None:
        """One broker stopped (a controlled shutdown: its partitions' leadership moves to the others)."""
        process = self.processes[node]
        assert process is not None, node
        process.stop()

    def start_node(self, node: int) -> None:
        """A stopped broker started again, on its configuration, storage and address."""
        self._launch(node)
        self._wait(node)

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
