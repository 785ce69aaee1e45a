"""python-redis-rate-limit (`redis_rate_limit`) on redis-py, run as itself, threaded.

Library: python-redis-rate-limit (version read from the installed package; requirements.txt pins
0.0.10, its latest release, with the redis-py it resolves to, 8.2.0: it installs and works on it).
API as its README documents it: `RateLimiter(resource, max_requests, expire, redis_pool).limit(client)`
gives a `RateLimit`, whose `increment_usage(increment_by)` (what `with rate_limit:` calls) raises
`TooManyRequests` over the limit; here `increment_usage(increment_by=cost)` is the check, and
`TooManyRequests` is a refusal.

What it does: one script per check (the INCR pattern of Redis's own docs): INCRBY the key by the
cost and, when the count equals the cost (the key's first hit), EXPIRE it `expire` seconds; allowed
while the count is within `max_requests`. A fixed window opened by each key's first hit and closed
by Redis's expiry (Redis's clock); refused hits count too. It sends EVALSHA of the script's SHA and,
on NOSCRIPT, EVAL of the whole script. `expire` is whole seconds, so a run whose window is not a
whole number of seconds is answered `fatal`. A cost above `max_requests` raises ValueError: it is
answered as an error (no decision).

Keys: the library always writes `rate_limit:<resource>_<client>`, a prefix of its own before
anything the caller gives, so no argument keeps its key under the key ratelab sends. This adapter
sets the `RateLimit` object's `_rate_limit_key` attribute to ratelab's key right after the library
builds it (one `RateLimit` per key, cached): the script, its arguments and the decision are the
library's own; only the key's name is ratelab's, so a run touches only its own keys.

Client: the `redis_pool` argument, a redis-py `ConnectionPool` from the run's URL with its
`timeout_ms` as socket timeouts (the library's default pool is 127.0.0.1:6379 with none), shared by
every key's `RateLimit`. With Sentinels, redis-py's `SentinelConnectionPool` (what
`Sentinel.master_for` builds) is that pool: it asks the Sentinels for the primary and again once it
lost it. No Cluster: the library wraps whatever pool it is given in a plain `Redis`, which cannot
follow a cluster's slots, so this adapter does not say `cluster` and ratelab does not run it there.

Concurrency: checks run in a pool of 32 threads (a threaded WSGI server's shape), each calling its
key's `RateLimit`; the library keeps no lock of its own.
"""
import importlib.metadata
import os
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import protocol  # noqa: E402  (../lib: the protocol, shared by the Python adapters)

import redis  # noqa: E402
from redis_rate_limit import RateLimiter, TooManyRequests  # noqa: E402


def pool(setup):
    """The `redis_pool` handed to the library: a Sentinel's primary or one server."""
    if setup.get("sentinel"):
        return protocol.sentinel_primary(setup).connection_pool
    return redis.ConnectionPool.from_url(setup["redis_url"], **protocol.client_options(setup))


class Limits:
    def __init__(self, setup):
        expire = protocol.whole_seconds(setup, "its expire's")
        self.pool = pool(setup)
        self.factory = RateLimiter(resource="ratelab", max_requests=setup["limit"], expire=expire,
                                   redis_pool=self.pool)
        self.limits = {}
        self.lock = threading.Lock()

    def limit(self, key):
        with self.lock:
            limit = self.limits.get(key)
            if limit is None:
                limit = self.limits[key] = self.factory.limit(client=key)
                # The library's own key would be `rate_limit:ratelab_<key>`: keep it under ratelab's key.
                limit._rate_limit_key = key
            return limit

    def check(self, key, cost):
        try:
            self.limit(key).increment_usage(increment_by=cost)
        except TooManyRequests:
            return {"allowed": False}
        return {"allowed": True}


def start(setup):
    limits = Limits(setup)
    try:
        redis.Redis(connection_pool=limits.pool).ping()
    except Exception as err:
        raise RuntimeError(f"cannot reach Redis: {err}") from err
    # No cluster: the library wraps any pool in a plain Redis, which cannot follow slots.
    ready = {"adapter": "python-redis-rate-limit", "library": "python-redis-rate-limit",
             "version": importlib.metadata.version("python-redis-rate-limit"),
             "client": f"redis-py {importlib.metadata.version('redis')}",
             # Its windows are Redis's EXPIRE: Redis's clock.
             "clock": "redis"}
    if setup.get("sentinel"):
        ready["sentinel"] = True
    return limits.check, ready


if __name__ == "__main__":
    protocol.serve(start)
