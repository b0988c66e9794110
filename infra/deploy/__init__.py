"""What a deployment adds to the plan: the stack's config and secrets (config), kubeconfigs
(kubeconfig) and the deployment that validates, plans and checks everything before a
resource is declared (deployment)."""
