"""Orchestration: configuration, the virtual-time simulator, processes and the results folder."""
