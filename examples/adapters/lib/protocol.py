"""The limiter process protocol (../PROTOCOL.md) for Python adapters of synchronous libraries on
redis-py, as protocol.js is for Node's: the setup line, the handshake, each check answered from a
pool of threads (a threaded WSGI server's shape) as one JSON line, and redis-py's errors by kind.

An adapter puts this folder on its path and calls `serve(start)`: `start(setup)` builds the
library's limiter and returns `(decide, ready)`, where `decide(key, cost)` is one check's answer
(`{"allowed": ...}`) and `ready` the handshake's fields beyond `type` and `protocol`; an exception
it raises is the adapter's `fatal` line.
"""
import concurrent.futures
import json
import os
import sys
import threading
import urllib.parse

import redis
from redis.sentinel import Sentinel

_out = threading.Lock()

# The setup's TLS files, as redis-py's connection options name them.
_TLS = [("tls_ca", "ssl_ca_certs"), ("tls_cert", "ssl_certfile"), ("tls_key", "ssl_keyfile")]


def say(message):
    """One line to ratelab; threads answer at once, so lines are written whole under a lock."""
    line = json.dumps(message) + "\n"
    with _out:
        sys.stdout.write(line)
        sys.stdout.flush()


def error_kind(err):
    """What a redis-py error says of the check: NoScriptError is a ResponseError, so it is first."""
    if isinstance(err, redis.exceptions.NoScriptError):
        return "noscript"
    if isinstance(err, redis.exceptions.ResponseError):
        return "reply"
    if isinstance(err, redis.exceptions.TimeoutError):
        return "timeout"
    return "connection"


def client_options(setup):
    """redis-py's connection options for the run: its `timeout_ms` on every socket, its TLS files
    (a server whose certificate the system's roots do not vouch for needs its CA)."""
    timeout = setup["timeout_ms"] / 1000
    options = {"socket_timeout": timeout, "socket_connect_timeout": timeout}
    for name, option in _TLS:
        if setup.get(name):
            options[option] = setup[name]
    return options


def sentinel_addresses(setup):
    """The Sentinels' (host, port) pairs, when the setup names them."""
    return [(host, int(port)) for host, port in (a.rsplit(":", 1) for a in setup["sentinel"]["addresses"])]


def sentinel_primary(setup):
    """redis-py's client of the primary the setup's Sentinels name (`Sentinel(...).master_for`):
    it asks them for the primary, and again once it lost it. The Sentinels are asked with the
    run's timeouts and without the server's credentials and TLS files."""
    options = client_options(setup)
    url = urllib.parse.urlsplit(setup["redis_url"])
    timeouts = {k: options[k] for k in ("socket_timeout", "socket_connect_timeout")}
    sentinel = Sentinel(sentinel_addresses(setup), **timeouts)
    return sentinel.master_for(setup["sentinel"]["name"], username=url.username, password=url.password, **options)


def whole_seconds(setup, whose):
    """Refuses a window that `whose` windows (whole seconds) cannot express."""
    if setup["window_ms"] % 1000 or setup["window_ms"] <= 0:
        raise ValueError(f"{whose} windows are whole seconds: cannot express {setup['window_ms']} ms")
    return setup["window_ms"] // 1000


def topologies(setup):
    """The handshake's `sentinel` and `cluster` for the clients the setup asked for (an adapter
    whose library cannot follow one says so by leaving it out)."""
    return {topology: True for topology in ("sentinel", "cluster") if setup.get(topology)}


def _answer(decide, check):
    try:
        say({"id": check["id"], **decide(check["key"], check.get("cost", 1))})
    except redis.exceptions.RedisError as err:  # the client failed: no decision was made
        say({"id": check["id"], "error": str(err) or type(err).__name__, "kind": error_kind(err)})
    except Exception as err:  # the library failed, or refused the check itself
        say({"id": check["id"], "error": f"{type(err).__name__}: {err}"})


def serve(start, workers=32):
    """Reads the setup, starts the library, says ready and answers every check until stdin ends."""
    line = sys.stdin.readline()
    if not line:
        return
    setup = json.loads(line)
    if setup.get("type") != "setup" or setup.get("protocol") != 1:
        say({"type": "fatal", "error": "expected a protocol 1 setup line"})
        return
    try:
        decide, ready = start(setup)
    except Exception as err:
        say({"type": "fatal", "error": str(err) or type(err).__name__})
        return
    say({"type": "ready", "protocol": 1, **ready})
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=workers)
    for line in sys.stdin:
        if line.strip():
            pool.submit(_answer, decide, json.loads(line))
    # stdin is closed: ratelab is done (or gone). Leave without waiting for checks still in flight.
    sys.stdout.flush()
    os._exit(0)
