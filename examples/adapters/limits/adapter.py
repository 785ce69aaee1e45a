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
import concurrent.futures
import importlib.metadata
import json
import os
import sys
import threading
import urllib.parse

import redis
from limits import RateLimitItemPerSecond
from limits.storage import storage_from_string
from limits.strategies import (
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

out = threading.Lock()


def say(message):
    line = json.dumps(message) + "\n"
    with out:
        sys.stdout.write(line)
        sys.stdout.flush()


def kind(err):
    if isinstance(err, redis.exceptions.NoScriptError):
        return "noscript"
    if isinstance(err, redis.exceptions.ResponseError):
        return "reply"
    if isinstance(err, redis.exceptions.TimeoutError):
        return "timeout"
    return "connection"


class Limits:
    """One limits storage (and strategy) per ratelab key, its key_prefix the key."""

    def __init__(self, setup, strategy):
        self.setup = setup
        self.strategy = strategy
        self.item = RateLimitItemPerSecond(setup["limit"], setup["window_ms"] // 1000)
        timeout = setup["timeout_ms"] / 1000
        self.options = {"socket_timeout": timeout, "socket_connect_timeout": timeout}
        # A server whose certificate the system's roots do not vouch for needs its CA.
        for name, option in [("tls_ca", "ssl_ca_certs"), ("tls_cert", "ssl_certfile"), ("tls_key", "ssl_keyfile")]:
            if setup.get(name):
                self.options[option] = setup[name]
        url = urllib.parse.urlsplit(setup["redis_url"])
        auth = ""
        if url.username or url.password:
            auth = f"{url.username or ''}:{url.password or ''}@"
        if setup.get("sentinel"):
            addresses = ",".join(setup["sentinel"]["addresses"])
            self.url = f"redis+sentinel://{auth}{addresses}/{setup['sentinel']['name']}"
            # The Sentinels themselves are asked without the server's credentials.
            self.options["sentinel_kwargs"] = {"username": None, "password": None,
                                               "socket_timeout": timeout, "socket_connect_timeout": timeout}
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


def answer(limits, check):
    try:
        say({"id": check["id"], **limits.check(check["key"], check.get("cost", 1))})
    except Exception as err:  # the client failed: no decision was made
        say({"id": check["id"], "error": str(err) or type(err).__name__, "kind": kind(err)})


def main():
    strategy = sys.argv[1] if len(sys.argv) > 1 else ""
    line = sys.stdin.readline()
    if not line:
        return
    setup = json.loads(line)
    if setup.get("type") != "setup" or setup.get("protocol") != 1:
        say({"type": "fatal", "error": "expected a protocol 1 setup line"})
        return
    if strategy not in STRATEGIES:
        say({"type": "fatal", "error": f"unknown strategy {strategy!r}: one of {', '.join(STRATEGIES)}"})
        return
    if setup["window_ms"] % 1000 or setup["window_ms"] <= 0:
        say({"type": "fatal", "error": f"limits' windows are whole seconds: cannot express {setup['window_ms']} ms"})
        return
    try:
        limits = Limits(setup, strategy)
        # Connect (and, through Sentinels or a cluster node, find the servers) before the handshake.
        limits.storage("ratelab").get_connection().ping()  # PING only: no key written
    except Exception as err:
        say({"type": "fatal", "error": f"cannot reach Redis: {err}"})
        return
    ready = {"type": "ready", "protocol": 1, "adapter": f"limits-{strategy}", "library": "limits",
             "version": importlib.metadata.version("limits"),
             "client": f"redis-py {importlib.metadata.version('redis')}",
             "clock": STRATEGIES[strategy][1]}
    for topology in ("sentinel", "cluster"):
        if setup.get(topology):
            ready[topology] = True
    say(ready)
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=32)
    for line in sys.stdin:
        if line.strip():
            pool.submit(answer, limits, json.loads(line))
    # stdin is closed: ratelab is done (or gone). Leave without waiting for checks still in flight.
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
