"""validate: a policy file checked by simulation (and optionally live)."""
