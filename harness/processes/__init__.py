"""The harness's process tools: free ports (``ports.py``), a process group stopped as one, written
once (``groups.py``), a target started and stopped from Python (``target.py``), redis-servers of
our own (``redis_server.py``). Used by the live runner, the tests and the benchmarks; nothing of
the server itself (targets/) needs them."""
