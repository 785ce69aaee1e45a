"""PyrateLimiter (`pyrate-limiter` on PyPI) with its `RedisBucket` on redis-py, run as itself, threaded.

Library: pyrate-limiter (version read from the installed package; requirements.txt pins 4.6.0 and
redis-py 8.2.0, what `pip install pyrate-limiter redis` resolves). API as its README documents it:
`RedisBucket.init([Rate(limit, window_ms)], Redis(connection_pool=...), bucket_key)` handed to a
`Limiter`, and `limiter.try_acquire(name, weight=cost, blocking=False)` per check (non-blocking: the
README's "fail fast instead"; the default, blocking, waits for a permit instead of deciding).

What it does: the bucket's `now()` is this process's `time_ns() // 1e6` (the caller's clock, in ms).
One EVALSHA of its PUT_ITEM script per check: `ZCOUNT key (now - window) now`; if the limit minus
that count is below the weight it refuses, else ZADD `weight` members scored `now`. The default
algorithm is `SlidingWindowLog`: a sliding log. The count stops at the caller's own `now`, so an
entry another process stamped a moment later (and added first) is not counted. The script's SHA is
loaded once by `RedisBucket.init` (SCRIPT LOAD) and then sent as raw EVALSHA with no fallback, so
once Redis loses its script cache (restart, promotion, SCRIPT FLUSH) every check fails with
NOSCRIPT until the bucket is built again; this adapter does not rebuild it. The sorted set gets no
expiry: a `Limiter` schedules a background "leak" thread (every 10 s) that ZREMRANGEBYSCOREs entries
older than the window.

Configuration (this adapter's argument, one manifest each: the choice PyrateLimiter's issue #172,
"Global or local instance of the Limiter?", is about):

- `shared` (pyrate-limiter.toml): one `Limiter` per ratelab key in the process (cached by key),
  shared by every thread as the README says it may be ("thread-safe via RLock"). With
  `blocking=False` that RLock is taken without waiting, and a check that finds another thread
  holding it is refused on the spot (`try_acquire` turns the lock's TimeoutError into False)
  without asking Redis: the library's non-blocking behaviour, measured as it is.
- `per-thread` (pyrate-limiter-per-thread.toml): each thread builds its own `Limiter` and
  `RedisBucket` for the key (cached per thread and key), as code that makes a limiter where it
  needs one does: no lock is shared, so the threads of one process meet only in Redis, as
  processes do, and the script's count up to the caller's own `now` is all that keeps them apart.

Either way the bucket key is ratelab's key itself (every key it writes is the key ratelab sent),
every limiter shares one redis-py client, and checks run in a pool of 32 threads (a threaded WSGI
server's shape), each calling `try_acquire` on its limiter.

Client: redis-py with the run's `timeout_ms` as socket timeouts; its exceptions pass through
`try_acquire` and are answered as errors by kind. Sentinel (`Sentinel(...).master_for(name)`) and
Cluster (`RedisCluster`) clients are handed to `RedisBucket.init` the same way (its README's Redis
section takes any redis-py client; SCRIPT LOAD on a cluster client goes to every primary).
"""
import concurrent.futures
import importlib.metadata
import json
import os
import sys
import threading
import urllib.parse

import redis
from redis.cluster import RedisCluster
from redis.sentinel import Sentinel
from pyrate_limiter import Limiter, Rate, RedisBucket

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


def client(setup):
    """The run's redis-py client: a Sentinel's primary, a cluster, or one server."""
    timeout = setup["timeout_ms"] / 1000
    options = {"socket_timeout": timeout, "socket_connect_timeout": timeout}
    for name, option in [("tls_ca", "ssl_ca_certs"), ("tls_cert", "ssl_certfile"), ("tls_key", "ssl_keyfile")]:
        if setup.get(name):
            options[option] = setup[name]
    url = urllib.parse.urlsplit(setup["redis_url"])
    if setup.get("sentinel"):
        addresses = [(host, int(port)) for host, port in (a.rsplit(":", 1) for a in setup["sentinel"]["addresses"])]
        sentinel = Sentinel(addresses, socket_timeout=timeout, socket_connect_timeout=timeout)
        return sentinel.master_for(setup["sentinel"]["name"], username=url.username, password=url.password, **options)
    if setup.get("cluster"):
        return RedisCluster.from_url(setup["redis_url"], **options)
    return redis.Redis(connection_pool=redis.ConnectionPool.from_url(setup["redis_url"], **options))


MODES = ("shared", "per-thread")


class Limiters:
    def __init__(self, setup, mode):
        self.setup = setup
        self.mode = mode
        self.redis = client(setup)
        self.limiters = {}  # shared: by key
        self.local = threading.local()  # per-thread: each thread's own, by key
        self.lock = threading.Lock()

    def new(self, key):
        rates = [Rate(self.setup["limit"], self.setup["window_ms"])]
        return Limiter(RedisBucket.init(rates, self.redis, key))

    def limiter(self, key):
        if self.mode == "per-thread":
            mine = self.local.__dict__.setdefault("limiters", {})
            if key not in mine:
                mine[key] = self.new(key)
            return mine[key]
        with self.lock:
            if key not in self.limiters:
                self.limiters[key] = self.new(key)
            return self.limiters[key]

    def check(self, key, cost):
        return {"allowed": self.limiter(key).try_acquire(key, weight=cost, blocking=False)}


def answer(limiters, check):
    try:
        say({"id": check["id"], **limiters.check(check["key"], check.get("cost", 1))})
    except Exception as err:  # the client failed: no decision was made
        say({"id": check["id"], "error": str(err) or type(err).__name__, "kind": kind(err)})


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "shared"
    line = sys.stdin.readline()
    if not line:
        return
    setup = json.loads(line)
    if setup.get("type") != "setup" or setup.get("protocol") != 1:
        say({"type": "fatal", "error": "expected a protocol 1 setup line"})
        return
    if mode not in MODES:
        say({"type": "fatal", "error": f"unknown mode {mode!r}: one of {', '.join(MODES)}"})
        return
    try:
        limiters = Limiters(setup, mode)
        limiters.redis.ping()
    except Exception as err:
        say({"type": "fatal", "error": f"cannot reach Redis: {err}"})
        return
    ready = {"type": "ready", "protocol": 1, "adapter": f"pyrate-limiter-{mode}", "library": "pyrate-limiter",
             "version": importlib.metadata.version("pyrate-limiter"),
             "client": f"redis-py {importlib.metadata.version('redis')}",
             # Its entries are stamped with this process's time_ns().
             "clock": "caller"}
    for topology in ("sentinel", "cluster"):
        if setup.get(topology):
            ready[topology] = True
    say(ready)
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=32)
    for line in sys.stdin:
        if line.strip():
            pool.submit(answer, limiters, json.loads(line))
    # stdin is closed: ratelab is done (or gone). Leave without waiting for checks still in flight.
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
