"""The one exception a bad Redis configuration raises (the CLI maps it to exit 2)."""

from contract.errors import BadInput


class RedisConfigError(BadInput):
    """REDIS_URL unusable at start: malformed, unreachable, or not what the mode needs."""
