"""kubesched.simulate."""
