"""Pulumi entry point (`pulumi preview` / `pulumi up`); the program lives in infra/program.py."""

from infra.program import main

main()
