"""The virtual-time simulator: one run of a traffic model through an algorithm, and the simulate workflow."""
