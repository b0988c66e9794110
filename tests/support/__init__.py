"""Helpers the test tiers share: stacks and topologies, trust material, patterns, the JDK
regex oracle, recorded URNs, the refusal helper and the engine tier's watch controller."""
