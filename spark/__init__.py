"""The replication audit. Implemented so far: the offsets audit's core (spark/offsets.py) and
the audit configuration derived from the plan (infra/audit.py); the Spark data audit, the job
entry point and its CronJob are not built yet."""
