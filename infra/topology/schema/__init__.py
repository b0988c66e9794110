"""The topology document as users write it (`stacks/<stack>.yaml`): its fields, their types and
the checks of each single value. Nothing derived is stored here: what follows from these fields
(the flows as deployed, their Connect clusters and source connectors) is infra/topology/resolution.py,
the rules across fields are infra/checks/rules/, and infra/checks/validation.py runs them in that order.
`docs/topology.md` documents every field.
"""

from infra.topology.schema.flow import (Alerts, Cluster, ConnectorConfig, ConnectorStates, ConnectPart, ConnectSettings,
                                        Converter, Converters, Failover, Flow, OffsetsRequest, PartitionOffset,
                                        Predicate, ResourceQuota, Resources, Sasl, SecretKeyRef, Security,
                                        SourceInstance, SyncGroupOffsets, TasksMax, Tls, TlsSecretRef, Transform)
from infra.topology.schema.topology import (Audit, AuditReports, AuditThresholds, AuditWindow, GrafanaOperator,
                                            ImagePullSecret,
                                            KubernetesCluster, Monitoring, Operator, Readiness, SparkExecutors,
                                            Topology, json_schema)
from infra.topology.schema.values import (BOOTSTRAP, DNS1123_LABEL, INT32, MAX_FILTERS, Amount, ClassName, ConfigValue,
                                          ConnectorState, Count, DnsLabel, DnsSubdomain, ExactlyOnce, Exporter,
                                          FailoverProcedure, GroupName, ImageRef, LabelKey, LabelValue, Mechanism,
                                          MemorySize, OffsetsAction, OffsetsRequestId, Policy, Protocol, PullPolicy,
                                          Quantity, Regexes, RegexList, RegistryUsername, ResourceName, SmtName,
                                          StartFrom, TargetConnection, TopicName, Trust, Username, quantity)

__all__ = ["Alerts", "Amount", "Audit", "AuditReports", "AuditThresholds", "AuditWindow", "BOOTSTRAP",
           "ClassName", "Cluster", "ConfigValue", "ConnectPart", "ConnectSettings", "ConnectorConfig",
           "ConnectorState", "ConnectorStates", "Converter", "Converters", "Count", "DNS1123_LABEL",
           "DnsLabel", "DnsSubdomain", "ExactlyOnce", "Exporter", "Failover", "FailoverProcedure", "Flow",
           "GrafanaOperator", "GroupName", "INT32", "ImagePullSecret", "ImageRef", "KubernetesCluster", "LabelKey", "LabelValue",
           "MAX_FILTERS", "Mechanism", "MemorySize", "Monitoring", "OffsetsAction", "OffsetsRequest",
           "OffsetsRequestId", "Operator", "PartitionOffset", "Policy", "Predicate", "Protocol", "PullPolicy",
           "Quantity", "Readiness", "RegexList", "Regexes", "RegistryUsername", "ResourceName",
           "ResourceQuota", "Resources", "Sasl", "SecretKeyRef", "Security", "SmtName", "SourceInstance",
           "SparkExecutors", "StartFrom", "SyncGroupOffsets", "TargetConnection", "TasksMax", "Tls", "TlsSecretRef",
           "TopicName", "Topology", "Transform", "Trust", "Username", "json_schema", "quantity"]
