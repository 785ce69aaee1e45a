// async-ratelimiter 1.6.10 (microlinkhq, "based on ratelimiter") on ioredis, as its README sets it up: one
// `new RateLimiter({ db, max, duration, namespace })` and `await limiter.get({ id })` per request, the request
// passing while `remaining` is not 0. get() is one ioredis `defineCommand` script (EVALSHA, and EVAL on NOSCRIPT):
// ZREMRANGEBYSCORE of entries older than `duration`, ZCARD, and only when that count is under `max`, ZADD of this
// request (score and member the caller's milliseconds, with hrtime's fraction) and PEXPIRE: a sliding log of the
// admitted requests only (a refused one is not logged, unlike tj's ratelimiter). ioredis gets the run's timeout as
// its commandTimeout, as the other ioredis adapters here; it follows a cluster and Sentinels (lib/protocol.js).
// Its Redis key is `<namespace>:<id>`: the adapter splits ratelab's key at its last `:` into the two, so the key
// it writes is ratelab's key itself, with one limiter per namespace (each run has one).
// It counts requests, not costs: a check of cost other than 1 is answered as an error.
'use strict';

const Redis = require('ioredis');
const RateLimiter = require('async-ratelimiter');
const { serve, installedVersion, ioredisClient } = require('../lib/protocol');

serve('async-ratelimiter', async (setup) => {
  const db = await ioredisClient(Redis, setup);
  const limiters = new Map();
  const limiterOf = (namespace) => {
    if (!limiters.has(namespace)) {
      limiters.set(namespace, new RateLimiter({ db, max: setup.limit, duration: setup.window_ms, namespace }));
    }
    return limiters.get(namespace);
  };
  return {
    library: 'async-ratelimiter',
    version: installedVersion(__dirname, 'async-ratelimiter'),
    client: `ioredis ${installedVersion(__dirname, 'ioredis')}`,
    // Its entries' scores are the adapter process's Date.now() at load plus process.hrtime() since.
    clock: 'caller',
    check: async (key, cost) => {
      if (cost !== 1) throw new Error(`async-ratelimiter counts requests, not costs: asked for ${cost}`);
      const at = key.lastIndexOf(':');
      const limit = await limiterOf(key.slice(0, at)).get({ id: key.slice(at + 1) });
      if (limit.remaining) return { allowed: true, remaining: limit.remaining - 1 };
      return { allowed: false, remaining: 0, retry_after_ms: Math.max(0, limit.reset * 1000 - Date.now()) };
    },
    close: () => db.quit(),
  };
});
