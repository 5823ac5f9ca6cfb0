"""kubesched.preemption."""
