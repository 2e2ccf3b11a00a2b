"""Where limiter state lives: ``memory`` (per process, bounded) and ``redis`` (shared by N nodes;
``redis/``, docs/redis.md)."""

STORES: dict[str, str] = {
    "memory": "per-process dict, bounded by idle TTL and max keys (LRU); nothing shared across nodes",
    "redis": "one atomic Lua script per decision, shared by every node; modes shared, local (L or L/N), "
             "leased (batches), naive (INCR then EXPIRE); fail-open to a local limit or fail-closed",
}
