"""limits (the library behind slowapi and flask-limiter), its synchronous API on redis-py, run as itself.

Library: `limits` (version read from the installed package; requirements.txt pins 5.8.0 with the
redis-py its `redis` extra allows, 7.4.1). API: `limits.storage.storage_from_string(url, ...)` and
one of its three strategies, chosen by this adapter's argument (one manifest each):

- `fixed-window`: `FixedWindowRateLimiter.hit` -> the storage's `incr_expire.lua` (INCRBY the cost,
  EXPIRE the window in seconds when the count equals the cost, i.e. at a key's first hit); allowed
  while the count returned is within the limit. Windows open at each key's first hit and end with
  Redis's expiry (Redis's clock). Denied hits count too.
- `moving-window`: `MovingWindowRateLimiter.hit` -> `acquire_moving_window.lua`, a sliding log in a
  list: refused if the entry at index limit - cost is newer than `timestamp - expiry`, else LPUSH
  `timestamp` cost times, LTRIM to the limit, EXPIRE. `timestamp` is this process's `time.time()`.
- `sliding-window-counter`: `SlidingWindowCounterRateLimiter.hit` -> `acquire_sliding_window.lua`:
  a current and a previous counter whose windows are kept by PTTL (the current key is SET with PX
  twice the window at a key's first hit and renamed to the previous one after one window), the
  previous count weighted by its remaining PTTL (Redis's clock). Refused hits are not counted.

Every strategy is called with the check's cost (`hit(item, ..., cost=cost)`), and the limit as
`RateLimitItemPerSecond(limit, window_ms / 1000)`: limits' windows are whole seconds (its scripts
EXPIRE in seconds), so a run whose window is not a whole number of seconds is answered `fatal`.

Keys: limits writes `<key_prefix>:<namespace>/<identifiers>/<amount>/<multiples>/<granularity>`
(the sliding window counter `<key_prefix>:{...}` and `<key_prefix>:{...}/-1`). Its documented way to
choose where they go is the storage option `key_prefix`, so each ratelab key gets a storage of its
own whose `key_prefix` is that key (cached by key; on a plain server they share one connection pool
through the storage's documented `connection_pool` argument): every key starts with `<key>:`. The
identifier passed to `hit` is the ratelab key too, not a constant: the sliding window counter
hash-tags `{LIMITER/<identifiers>/...}` to keep its two keys in one Cluster slot, and with a
constant identifier every user's keys would land in the one same slot; with the key they spread
over the cluster as an application's per-user identifiers do.

Sentinel and Cluster: limits' own `redis+sentinel://host:port,.../<name>` (`RedisSentinelStorage`,
redis-py's `Sentinel.master_for`) and `redis+cluster://host:port` (`RedisClusterStorage`, redis-py's
`RedisCluster`) storages are built from the setup line's Sentinels and node, one per key. The
Sentinels are not sent the server's credentials (limits sends the URL's to both unless
`sentinel_kwargs` says otherwise; ratelab's Sentinels have none).

Client: the storage's redis-py client with the run's `timeout_ms` as `socket_timeout` and
`socket_connect_timeout`, limits' `wrap_exceptions` left at its default (False), so the client's
own exceptions reach this adapter and are classified by kind. redis-py's `Script` objects (limits'
`register_script`) send EVALSHA and, on NOSCRIPT, SCRIPT LOAD and EVALSHA again.

Concurrency: the sync API in a pool of 32 threads (a threaded WSGI server's shape): every check of
a read is submitted at once; beyond 32 in flight they queue here and count as latency.
"""
import importlib.metadata
import os
import sys
import threading
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import protocol  # noqa: E402  (../lib: the protocol, shared by the Python adapters)

import redis  # noqa: E402
from limits import RateLimitItemPerSecond  # noqa: E402
from limits.storage import storage_from_string  # noqa: E402
from limits.strategies import (  # noqa: E402
    FixedWindowRateLimiter,
    MovingWindowRateLimiter,
    SlidingWindowCounterRateLimiter,
)

STRATEGIES = {
    # strategy: (class, whose clock decides)
    "fixed-window": (FixedWindowRateLimiter, "redis"),
    "moving-window": (MovingWindowRateLimiter, "caller"),
    "sliding-window-counter": (SlidingWindowCounterRateLimiter, "redis"),
}


class Limits:
    """One limits storage (and strategy) per ratelab key, its key_prefix the key."""

    def __init__(self, setup, strategy):
        self.strategy = strategy
        self.item = RateLimitItemPerSecond(setup["limit"], protocol.whole_seconds(setup, "limits'"))
        self.options = protocol.client_options(setup)
        url = urllib.parse.urlsplit(setup["redis_url"])
        auth = ""
        if url.username or url.password:
            auth = f"{url.username or ''}:{url.password or ''}@"
        if setup.get("sentinel"):
            addresses = ",".join(setup["sentinel"]["addresses"])
            self.url = f"redis+sentinel://{auth}{addresses}/{setup['sentinel']['name']}"
            # The Sentinels themselves are asked without the server's credentials.
            timeouts = {k: self.options[k] for k in ("socket_timeout", "socket_connect_timeout")}
            self.options["sentinel_kwargs"] = {"username": None, "password": None, **timeouts}
            self.pool = None
        elif setup.get("cluster"):
            if url.scheme == "rediss":
                self.options["ssl"] = True
            self.url = f"redis+cluster://{auth}{url.hostname}:{url.port or 6379}"
            self.pool = None
        else:
            self.url = setup["redis_url"]
            # The storages of every key share this pool (limits' `connection_pool` argument).
            self.pool = redis.ConnectionPool.from_url(self.url, **self.options)
        self.limiters = {}
        self.lock = threading.Lock()

    def storage(self, key):
        if self.pool is not None:
            return storage_from_string(self.url, key_prefix=key, connection_pool=self.pool)
        return storage_from_string(self.url, key_prefix=key, **self.options)

    def limiter(self, key):
        with self.lock:
            limiter = self.limiters.get(key)
            if limiter is None:
                limiter = self.limiters[key] = STRATEGIES[self.strategy][0](self.storage(key))
            return limiter

    def check(self, key, cost):
        return {"allowed": self.limiter(key).hit(self.item, key, cost=cost)}


def start(setup):
    strategy = sys.argv[1] if len(sys.argv) > 1 else ""
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown strategy {strategy!r}: one of {', '.join(STRATEGIES)}")
    limits = Limits(setup, strategy)
    try:
        # Connect (and, through Sentinels or a cluster node, find the servers) before the handshake.
        limits.storage("ratelab").get_connection().ping()  # PING only: no key written
    except Exception as err:
        raise RuntimeError(f"cannot reach Redis: {err}") from err
    ready = {"adapter": f"limits-{strategy}", "library": "limits",
             "version": importlib.metadata.version("limits"),
             "client": f"redis-py {importlib.metadata.version('redis')}",
             "clock": STRATEGIES[strategy][1], **protocol.topologies(setup)}
    return limits.check, ready


if __name__ == "__main__":
    protocol.serve(start)
