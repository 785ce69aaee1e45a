// rate-limiter-flexible on ioredis, as an application sets it up: RateLimiterRedis (one Lua script per
// consume) or RateLimiterRedisNonAtomic (GET and PTTL in one MULTI, the decision in JavaScript, then
// SET in another): argv[2] is `atomic` or `non-atomic`. Library defaults otherwise: no insurance
// limiter, rejectIfRedisNotReady off (ioredis queues commands while it reconnects); ioredis's
// commandTimeout is the run's timeout.
'use strict';

const Redis = require('ioredis');
const { RateLimiterRedis, RateLimiterRedisNonAtomic, RateLimiterRes } = require('rate-limiter-flexible');
const { serve, installedVersion, ioredisClient } = require('../lib/protocol');

const kinds = { atomic: RateLimiterRedis, 'non-atomic': RateLimiterRedisNonAtomic };
const kind = process.argv[2];

serve(`rate-limiter-flexible ${kind}`, async (setup) => {
  const Limiter = kinds[kind];
  if (!Limiter) throw new Error(`argv[2] must be atomic or non-atomic, not ${kind}`);
  if (setup.window_ms % 1000 !== 0) throw new Error(`its duration is whole seconds: window_ms ${setup.window_ms}`);
  const client = await ioredisClient(Redis, setup);
  // An empty keyPrefix: the Redis key is ratelab's key itself, under the run's prefix.
  const duration = setup.window_ms / 1000;
  const limiter = new Limiter({ storeClient: client, keyPrefix: '', points: setup.limit, duration });
  return {
    library: 'rate-limiter-flexible',
    version: installedVersion(__dirname, 'rate-limiter-flexible'),
    client: `ioredis ${installedVersion(__dirname, 'ioredis')}`,
    check: (key, cost) =>
      limiter.consume(key, cost).then(
        (res) => ({ allowed: true, remaining: res.remainingPoints }),
        (res) => {
          if (!(res instanceof RateLimiterRes)) throw res; // Redis failed: no decision
          return { allowed: false, remaining: res.remainingPoints, retry_after_ms: res.msBeforeNext };
        },
      ),
    close: () => client.quit(),
  };
});
