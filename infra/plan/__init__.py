"""The pure plan: from the resolved model to connector configs, connection properties,
metrics, offsets, failover settings, the audit's config, monitoring objects and the stack plan
(stack). No Pulumi, no I/O: every function here is tested on values."""
