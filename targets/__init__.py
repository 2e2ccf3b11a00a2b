"""The systems under test: pure algorithm cores, the stores that hold their state, and the targets."""
