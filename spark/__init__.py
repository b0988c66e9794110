"""The replication audit (docs/audit.md): `python -m spark.audit`.

    audit.py     the job: per flow, offsets audit, data audit, freshness; report and exit code
    offsets.py   committed Connect offsets against source watermarks
    data.py      the two-tier record comparison (Spark built-ins)
    clusters.py  Kafka (librdkafka + Spark's Kafka source) or Parquet dumps behind one interface
    report.py    statuses, thresholds, report.json, detail.parquet, Pushgateway metrics
    sample.py    simulated clusters with injected faults and their ground truth
Its input is the audit configuration infra/plan/audit.py derives from the deployment plan."""
