"""moralsim package."""
