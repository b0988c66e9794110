"""Every refusal: topology rules (rules), safety guardrails with their acknowledgements
(guardrails), the one funnel that parses and runs them all (validation) and the policies the
pack and the program share on planned objects (policies)."""
