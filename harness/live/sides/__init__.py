"""The sides under test of live runs: the protocol (``base.py``) and the suite's own nodes
(``suite.py``); the peers' sides live with their peers (``harness/live/peers/``)."""
