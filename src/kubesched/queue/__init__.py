"""kubesched.queue."""
