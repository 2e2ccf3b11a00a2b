"""Orchestration, one subpackage per workflow: campaign (config files), sim, live, validate, cli."""
