"""The leaves every layer may use: problems and errors, derived names, the operator release
table and its version gates, config-provider references, bounded reading, trust and key
stores, cron expressions and the Kubernetes object shapes."""
