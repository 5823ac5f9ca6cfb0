"""Small helpers shared across layers (Go-compatible formatting, clocks)."""
