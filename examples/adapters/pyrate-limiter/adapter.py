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
import importlib.metadata
import os
import sys
import threading

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import protocol  # noqa: E402  (../lib: the protocol, shared by the Python adapters)

import redis  # noqa: E402
from redis.cluster import RedisCluster  # noqa: E402
from pyrate_limiter import Limiter, Rate, RedisBucket  # noqa: E402


def client(setup):
    """The run's redis-py client: a Sentinel's primary, a cluster, or one server."""
    if setup.get("sentinel"):
        return protocol.sentinel_primary(setup)
    options = protocol.client_options(setup)
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


def start(setup):
    mode = sys.argv[1] if len(sys.argv) > 1 else "shared"
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}: one of {', '.join(MODES)}")
    limiters = Limiters(setup, mode)
    try:
        limiters.redis.ping()
    except Exception as err:
        raise RuntimeError(f"cannot reach Redis: {err}") from err
    ready = {"adapter": f"pyrate-limiter-{mode}", "library": "pyrate-limiter",
             "version": importlib.metadata.version("pyrate-limiter"),
             "client": f"redis-py {importlib.metadata.version('redis')}",
             # Its entries are stamped with this process's time_ns().
             "clock": "caller", **protocol.topologies(setup)}
    return limiters.check, ready


if __name__ == "__main__":
    protocol.serve(start)
