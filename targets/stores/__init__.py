"""Where limiter state lives: ``memory`` (per process, bounded); Redis comes with its own issue."""

STORES: dict[str, str] = {
    "memory": "per-process dict, bounded by idle TTL and max keys (LRU); nothing shared across nodes",
}
