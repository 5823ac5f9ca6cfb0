"""kubesched.plugins."""
