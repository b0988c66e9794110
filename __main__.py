"""Pulumi entry point (`pulumi preview` / `pulumi up`); the program lives in components/program.py."""

from components.program import main
from infra.core import collector

# The engine resolves the resources after this module returns, in this process: the setting
# stays for the process (infra/core/collector.py).
collector.for_the_process()
main()
