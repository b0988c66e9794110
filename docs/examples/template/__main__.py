"""The Pulumi program: the stack's topology file (stacks/<stack>.yaml) deployed by the installed
kafka-replication package."""

from components.program import main

main()
