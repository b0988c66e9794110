"""The contract between the deployer and the audit job, standard library only: the client
property table (clientprops), the audit configuration's names and shape (audit), the stack
outputs with their reader (outputs) and the newest release the tree names (release). Both sides import it; it imports nothing of the project."""
