"""kubesched.cache."""
