#!/usr/bin/env python3
"""A limiter process for ratelab's protocol tests, with no dependencies: a fixed window opened
at each key's first request (SET NX PX, then INCRBY) on a real Redis, spoken to in RESP over one
socket with the commands of concurrent checks pipelined. It gives each check the setup's
`timeout_ms` (answering an error of kind `timeout` when it runs out) and opens a new connection
when its server closed the last one (a restarted server), as a library's client would.
argv[1] picks how it behaves:

  window          a correct adapter
  crash-after N   answers N checks, then exits with status 3
  time-out-every K  answers every K-th check it is sent with an error of kind `timeout`, as a
                  library's client that gave up (it does not ask Redis), and decides the others
  garbage         answers the first check with a line that is not JSON
  not-utf8        answers the first check with a line that is not UTF-8
  unknown-id      answers the first check with an id that was never sent
  silent          never answers a check
  silent-after N  answers N checks, then never answers another
  fatal           says it cannot start
  old-protocol    says it speaks protocol 0
  no-handshake    exits before its handshake
  sentinel-blind  says it follows a Sentinel promotion but keeps to the primary it was given, as a
                  library's client pinned to one address does
"""
import asyncio
import json
import os
import sys
import urllib.parse


def command(*args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        a = str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


async def read_reply(reader):
    line = await reader.readline()
    if not line:
        raise ConnectionError("the server closed the connection")
    line = line.rstrip(b"\r\n")
    kind, rest = line[:1], line[1:]
    if kind == b"-":
        raise RuntimeError(rest.decode())
    if kind == b":":
        return int(rest)
    if kind == b"+":
        return rest.decode()
    if kind == b"$":
        n = int(rest)
        return None if n < 0 else (await reader.readexactly(n + 2))[:-2].decode()
    raise RuntimeError("unexpected reply %r" % line)


class Redis:
    """One connection; replies arrive in the order commands were written."""

    def __init__(self, reader, writer):
        self.reader, self.writer, self.waiting = reader, writer, asyncio.Queue()
        self.closed = False
        self.task = asyncio.get_running_loop().create_task(self.read())

    async def read(self):
        while True:
            fut = await self.waiting.get()
            try:
                reply, failed = await read_reply(self.reader), False
            except Exception as e:  # a dead server fails every waiting command
                reply, failed = e, True
                self.closed = self.closed or isinstance(e, ConnectionError)
            if fut.done():  # its check gave up (timed out): the reply is nobody's
                continue
            if failed:
                fut.set_exception(reply)
            else:
                fut.set_result(reply)

    def send(self, *args):
        if self.closed:
            raise ConnectionError("the connection is closed")
        fut = asyncio.get_running_loop().create_future()
        self.writer.write(command(*args))
        self.waiting.put_nowait(fut)
        return fut


class Client:
    """A connection made on first use and again once the server closed the last one."""

    def __init__(self, url):
        self.url, self.redis, self.lock = url, None, asyncio.Lock()

    async def connection(self):
        async with self.lock:
            if self.redis is None or self.redis.closed:
                r, w = await asyncio.open_connection(self.url.hostname, self.url.port)
                redis = Redis(r, w)
                if self.url.password:
                    user = [self.url.username] if self.url.username else []
                    await redis.send("AUTH", *user, self.url.password)
                self.redis = redis
            return self.redis


def say(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


async def main():
    mode = sys.argv[1]
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    setup = json.loads(await reader.readline())
    if mode == "no-handshake":
        sys.exit(0)
    if mode == "fatal":
        say({"type": "fatal", "error": "this fixture was told to refuse"})
        sys.exit(1)
    client = Client(urllib.parse.urlparse(setup["redis_url"]))
    await client.connection()
    protocol = 0 if mode == "old-protocol" else 1
    ready = {"type": "ready", "protocol": protocol, "adapter": "fixture", "library": "fixture",
             "version": "1." + mode, "client": "raw RESP"}
    if mode == "sentinel-blind":
        ready["sentinel"] = True
    say(ready)
    limit, window_ms = setup["limit"], setup["window_ms"]
    timeout_s = setup["timeout_ms"] / 1000
    answered = sent = 0

    async def count(msg):
        redis = await client.connection()
        opened = redis.send("SET", msg["key"], 0, "PX", window_ms, "NX")
        opened.add_done_callback(lambda f: f.cancelled() or f.exception())  # INCRBY says it
        return await redis.send("INCRBY", msg["key"], msg["cost"])

    async def check(msg):
        nonlocal answered, sent
        sent += 1
        if mode == "time-out-every" and sent % int(sys.argv[2]) == 0:
            say({"id": msg["id"], "error": "fixture: timed out as told", "kind": "timeout"})
            return
        if mode == "silent" or (mode == "silent-after" and answered >= int(sys.argv[2])):
            return
        if mode == "garbage":
            sys.stdout.write("this is not json\n")
            sys.stdout.flush()
            return
        if mode == "not-utf8":
            sys.stdout.buffer.write(b"{\"id\": \xff\xfe}\n")
            sys.stdout.buffer.flush()
            return
        if mode == "unknown-id":
            say({"id": msg["id"] + 1000, "allowed": True})
            return
        try:
            n = await asyncio.wait_for(count(msg), timeout_s)
            say({"id": msg["id"], "allowed": n <= limit})
        except asyncio.TimeoutError:  # before OSError, of which it is one
            say({"id": msg["id"], "error": "no reply within timeout_ms", "kind": "timeout"})
        except (ConnectionError, OSError) as e:
            say({"id": msg["id"], "error": str(e) or type(e).__name__, "kind": "connection"})
        except Exception as e:
            say({"id": msg["id"], "error": str(e), "kind": "reply"})
        answered += 1
        if mode.startswith("crash-after") and answered >= int(sys.argv[2]):
            print("fixture: crashing as told", file=sys.stderr, flush=True)
            os._exit(3)

    tasks = set()
    while line := await reader.readline():
        task = loop.create_task(check(json.loads(line)))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
    # stdin ended: ratelab is done (or gone). Finish what is in flight, briefly.
    if tasks:
        await asyncio.wait(tasks, timeout=1)


if __name__ == "__main__":
    asyncio.run(main())
