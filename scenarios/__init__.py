"""scenarios package."""
