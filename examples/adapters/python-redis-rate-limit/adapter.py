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
import concurrent.futures
import importlib.metadata
import json
import os
import sys
import threading
import urllib.parse

import redis
from redis.sentinel import Sentinel
from redis_rate_limit import RateLimiter, TooManyRequests

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


def pool(setup):
    """The `redis_pool` handed to the library: a Sentinel's primary or one server."""
    timeout = setup["timeout_ms"] / 1000
    options = {"socket_timeout": timeout, "socket_connect_timeout": timeout}
    for name, option in [("tls_ca", "ssl_ca_certs"), ("tls_cert", "ssl_certfile"), ("tls_key", "ssl_keyfile")]:
        if setup.get(name):
            options[option] = setup[name]
    if setup.get("sentinel"):
        url = urllib.parse.urlsplit(setup["redis_url"])
        addresses = [(host, int(port)) for host, port in (a.rsplit(":", 1) for a in setup["sentinel"]["addresses"])]
        sentinel = Sentinel(addresses, socket_timeout=timeout, socket_connect_timeout=timeout)
        primary = sentinel.master_for(setup["sentinel"]["name"], username=url.username, password=url.password,
                                      **options)
        return primary.connection_pool
    return redis.ConnectionPool.from_url(setup["redis_url"], **options)


class Limits:
    def __init__(self, setup):
        self.pool = pool(setup)
        self.factory = RateLimiter(resource="ratelab", max_requests=setup["limit"],
                                   expire=setup["window_ms"] // 1000, redis_pool=self.pool)
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


def answer(limits, check):
    try:
        say({"id": check["id"], **limits.check(check["key"], check.get("cost", 1))})
    except redis.exceptions.RedisError as err:  # the client failed: no decision was made
        say({"id": check["id"], "error": str(err) or type(err).__name__, "kind": kind(err)})
    except Exception as err:  # the library refused the check itself (a cost above the limit)
        say({"id": check["id"], "error": f"{type(err).__name__}: {err}"})


def main():
    line = sys.stdin.readline()
    if not line:
        return
    setup = json.loads(line)
    if setup.get("type") != "setup" or setup.get("protocol") != 1:
        say({"type": "fatal", "error": "expected a protocol 1 setup line"})
        return
    if setup["window_ms"] % 1000 or setup["window_ms"] <= 0:
        say({"type": "fatal", "error": f"its expire is whole seconds: cannot express {setup['window_ms']} ms"})
        return
    try:
        limits = Limits(setup)
        redis.Redis(connection_pool=limits.pool).ping()
    except Exception as err:
        say({"type": "fatal", "error": f"cannot reach Redis: {err}"})
        return
    ready = {"type": "ready", "protocol": 1, "adapter": "python-redis-rate-limit",
             "library": "python-redis-rate-limit", "version": importlib.metadata.version("python-redis-rate-limit"),
             "client": f"redis-py {importlib.metadata.version('redis')}",
             # Its windows are Redis's EXPIRE: Redis's clock.
             "clock": "redis"}
    if setup.get("sentinel"):
        ready["sentinel"] = True
    say(ready)
    workers = concurrent.futures.ThreadPoolExecutor(max_workers=32)
    for line in sys.stdin:
        if line.strip():
            workers.submit(answer, limits, json.loads(line))
    # stdin is closed: ratelab is done (or gone). Leave without waiting for checks still in flight.
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
