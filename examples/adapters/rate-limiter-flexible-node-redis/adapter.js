// rate-limiter-flexible 11.4.0's RateLimiterRedis on node-redis (the `redis` package, 6.4.0), set up as its docs
// show for that client: `createClient(...)`, `await connect()`, `new RateLimiterRedis({ storeClient, useRedisPackage:
// true, points, duration })` and `consume(key, points)`. With useRedisPackage it sends its script as a plain EVAL on
// every consume (SET NX EX, INCRBY, PTTL: a fixed window opened by the first hit), never EVALSHA, so a lost script
// cache cannot fail it. Beside rate-limiter-flexible/ (the same limiter on ioredis), this measures what the client
// changes. Library defaults otherwise: no insurance limiter, rejectIfRedisNotReady off, and node-redis's own
// defaults (offline queue on, reconnecting forever); the run's timeout is its default `commandOptions.timeout`
// (node-redis rejects a command that waited that long to be sent; one already sent waits for its reply). It follows
// a cluster (`createCluster` from the node it is told) and Sentinels (`createSentinel`), through lib/protocol.js.
'use strict';

const redis = require('redis');
const { RateLimiterRedis, RateLimiterRes } = require('rate-limiter-flexible');
const { serve, installedVersion, nodeRedisClient } = require('../lib/protocol');

async function connect(setup) {
  return nodeRedisClient(redis, setup, { commandOptions: { timeout: setup.timeout_ms } });
}

serve('rate-limiter-flexible node-redis', async (setup) => {
  if (setup.window_ms % 1000 !== 0) throw new Error(`its duration is whole seconds: window_ms ${setup.window_ms}`);
  const client = await connect(setup);
  // An empty keyPrefix: the Redis key is ratelab's key itself, under the run's prefix.
  const duration = setup.window_ms / 1000;
  const limiter = new RateLimiterRedis({
    storeClient: client, useRedisPackage: true, keyPrefix: '', points: setup.limit, duration,
  });
  return {
    library: 'rate-limiter-flexible',
    version: installedVersion(__dirname, 'rate-limiter-flexible'),
    client: `node-redis ${installedVersion(__dirname, 'redis')}`,
    cluster: setup.cluster === true,
    sentinel: Boolean(setup.sentinel),
    check: (key, cost) =>
      limiter.consume(key, cost).then(
        (res) => ({ allowed: true, remaining: res.remainingPoints }),
        (res) => {
          if (!(res instanceof RateLimiterRes)) throw res; // Redis failed: no decision
          return { allowed: false, remaining: res.remainingPoints, retry_after_ms: res.msBeforeNext };
        },
      ),
    close: () => client.close(),
  };
});
