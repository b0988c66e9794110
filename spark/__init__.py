"""The replication audit (PySpark); see spark/README.md."""
