"""A small limiter of our own in Python on redis-py's asyncio client: it shows ratelab's limiter
process protocol (PROTOCOL.md) is not Node-specific. A fixed window opened by each key's first hit,
in one MULTI: INCRBY the cost, PEXPIRE ... NX (Redis >= 7.0), and the request passes while the count
INCRBY returned is within the limit: INCRBY returns the post-increment value atomically, so no
decision reads a stale count. Denied requests count too, as in most INCR limiters.
"""
import asyncio
import importlib.metadata
import json
import sys
import urllib.parse

import redis.asyncio as redis
from redis.exceptions import NoScriptError
from redis.asyncio.cluster import RedisCluster
from redis.asyncio.sentinel import Sentinel


def say(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def kind(err):
    # NoScriptError is a ResponseError: the script is gone and the client did not load it again.
    if isinstance(err, NoScriptError):
        return "noscript"
    if isinstance(err, redis.ResponseError):
        return "reply"
    if isinstance(err, (redis.TimeoutError, asyncio.TimeoutError)):
        return "timeout"
    return "connection"


async def decide(client, setup, check):
    cost = check.get("cost", 1)
    async with client.pipeline(transaction=True) as tx:
        tx.incrby(check["key"], cost)
        tx.pexpire(check["key"], setup["window_ms"], nx=True)
        count, _ = await tx.execute()
    return {"allowed": count <= setup["limit"], "remaining": max(0, setup["limit"] - count)}


async def answer(client, setup, check):
    try:
        say({"id": check["id"], **await decide(client, setup, check)})
    except Exception as err:  # the client failed: no decision was made
        say({"id": check["id"], "error": str(err) or type(err).__name__, "kind": kind(err)})


async def lines():
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=1 << 20)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    while line := await reader.readline():
        yield line


def sentinel_client(setup, timeout, tls):
    """redis-py's Sentinel client: it asks the Sentinels for the primary, and again once it lost it."""
    url = urllib.parse.urlparse(setup["redis_url"])
    addresses = []
    for address in setup["sentinel"]["addresses"]:
        host, port = address.rsplit(":", 1)
        addresses.append((host, int(port)))
    sentinel = Sentinel(addresses, socket_timeout=timeout, socket_connect_timeout=timeout)
    return sentinel.master_for(
        setup["sentinel"]["name"],
        socket_timeout=timeout,
        socket_connect_timeout=timeout,
        username=url.username,
        password=url.password,
        **tls,
    )


async def main():
    stream = lines()
    setup = json.loads(await anext(stream))
    if setup.get("type") != "setup" or setup.get("protocol") != 1:
        say({"type": "fatal", "error": "expected a protocol 1 setup line"})
        return
    timeout = setup["timeout_ms"] / 1000
    # At most 32 connections; a check waits for a free one rather than opening one per check in
    # flight, up to half of how long ratelab waits for an answer (a burst beyond what one Python
    # process does queues here, and is measured as latency, not failed).
    wait = setup["answer_ms"] / 2000
    # A server whose certificate the system's roots do not vouch for (ratelab's own CA) needs its
    # CA; a server that asks for a client certificate, the certificate and key.
    tls = {
        option: setup[name]
        for name, option in [("tls_ca", "ssl_ca_certs"), ("tls_cert", "ssl_certfile"), ("tls_key", "ssl_keyfile")]
        if setup.get(name)
    }
    if setup.get("sentinel"):
        client = sentinel_client(setup, timeout, tls)
    elif setup.get("cluster"):
        # redis-py's cluster client, started from the one node it was told: it reads the slot map
        # and sends each check's MULTI to the node owning its key.
        client = RedisCluster.from_url(
            setup["redis_url"], socket_timeout=timeout, socket_connect_timeout=timeout, **tls
        )
    else:
        pool = redis.BlockingConnectionPool.from_url(
            setup["redis_url"],
            max_connections=32,
            timeout=wait,
            socket_timeout=timeout,
            socket_connect_timeout=timeout,
            **tls,
        )
        client = redis.Redis(connection_pool=pool)
    try:
        await client.ping()
    except Exception as err:
        say({"type": "fatal", "error": f"cannot reach Redis: {err}"})
        return
    version = importlib.metadata.version("redis")
    ready = {"type": "ready", "protocol": 1, "adapter": "python-redis-py", "library": "ratelab's python window",
             "version": "1", "client": f"redis-py {version}"}
    for topology in ("sentinel", "cluster"):
        if setup.get(topology):
            ready[topology] = True
    say(ready)
    tasks = set()
    async for line in stream:
        task = asyncio.create_task(answer(client, setup, json.loads(line)))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
    await client.aclose()


if __name__ == "__main__":
    asyncio.run(main())
