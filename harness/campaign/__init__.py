"""Campaign and policy files: what the live, simulate and validate commands read (pydantic, checked up front)."""
