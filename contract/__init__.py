"""The contract between the deployer and the audit job, standard library only: the client
property table (clientprops), the audit configuration's names and shape (audit) and the stack
outputs with their reader (outputs). Both sides import it; it imports nothing of the project."""
