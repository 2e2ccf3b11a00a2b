"""Judging an endpoint from outside (``run_bench.py judge``): the endpoint seen only through its
answers (``endpoint.py``; a model standing in for one in ``virtual.py``), the probes that learn
its window and hunt its worst case (``hunt.py``), and the verdict (``verdict.py``)."""
