"""kubesched.api."""
