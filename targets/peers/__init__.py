"""Peer targets that run in Python: processes of their own, started by harness/live/peers/."""
