"""What users write: the topology document's schema (pydantic, frozen) and its resolution into
the model every later layer reads (defaults applied, releases found, filters compiled)."""
