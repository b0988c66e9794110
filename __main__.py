"""Pulumi entry point (`pulumi preview` / `pulumi up`); the program lives in components/program.py."""

from components.program import main

main()
