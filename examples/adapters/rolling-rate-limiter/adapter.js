// rolling-rate-limiter's RedisRateLimiter on ioredis: a sliding log in a sorted set, one MULTI per
// check (ZREMRANGEBYSCORE, ZADD of this attempt, ZRANGE, EXPIRE) and the decision in JavaScript from
// the timestamps it read back. Every attempt is logged, denied ones included. Its clock is the
// client's (microseconds). It has no cost: a check of cost other than 1 is answered as an error.
'use strict';

const Redis = require('ioredis');
const { RedisRateLimiter } = require('rolling-rate-limiter');
const { serve, installedVersion, ioredisClient } = require('../lib/protocol');

serve('rolling-rate-limiter', async (setup) => {
  const client = await ioredisClient(Redis, setup);
  // An empty namespace: the Redis key is ratelab's key itself, under the run's prefix.
  const options = { client, namespace: '', interval: setup.window_ms, maxInInterval: setup.limit };
  const limiter = new RedisRateLimiter(options);
  return {
    library: 'rolling-rate-limiter',
    version: installedVersion(__dirname, 'rolling-rate-limiter'),
    client: `ioredis ${installedVersion(__dirname, 'ioredis')}`,
    // Its log's scores are microtime.now() of this process.
    clock: 'caller',
    check: async (key, cost) => {
      if (cost !== 1) throw new Error(`rolling-rate-limiter counts attempts, not costs: asked for ${cost}`);
      const info = await limiter.limitWithInfo(key);
      const { blocked, actionsRemaining: remaining, millisecondsUntilAllowed: retry } = info;
      return { allowed: !blocked, remaining, retry_after_ms: retry };
    },
    close: () => client.quit(),
  };
});
