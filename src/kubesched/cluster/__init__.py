"""kubesched.cluster."""
