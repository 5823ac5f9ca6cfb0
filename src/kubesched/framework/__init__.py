"""kubesched.framework."""
