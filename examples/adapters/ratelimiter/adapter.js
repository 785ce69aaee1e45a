// ratelimiter 3.4.1 (tj/node-ratelimiter), as its README uses it: a `new Limiter({ id, db, max, duration })` per
// request and `limit.get(cb)`, the request passing while `remaining` is not 0. get() is one MULTI of
// ZREMRANGEBYSCORE (entries older than `duration`), ZCARD, ZADD of this attempt (score and member the caller's
// microseconds), ZRANGE twice, ZREMRANGEBYRANK (keeps the newest `max` entries) and PEXPIRE; the decision is the
// ZCARD read before this attempt was added, so every attempt is logged, refused ones included: a sliding log.
// argv[2] picks the client `db` is: `redis` (node_redis, the client of the library's own tests; 3.1.2, the newest
// whose `multi(commands).exec(cb)` it calls: node-redis 4 and later have no such call) or `ioredis` (which it
// supports since 2.1.0). Neither gets a budget the library does not set: node_redis 3 has no command timeout and
// queues commands while it reconnects (its defaults); ioredis gets the run's timeout as its commandTimeout, as
// the other ioredis adapters here. node_redis 3 has no cluster or Sentinel client; ioredis follows both.
// Its key is always `limit:<id>`, with no option to change it, so `limit:<ratelab key>` would fall outside the
// run's keys: the adapter sets the instance's `key` to ratelab's key after construction (nothing else differs).
// It counts requests, not costs: a check of cost other than 1 is answered as an error.
'use strict';

const Limiter = require('ratelimiter');
const { serve, installedVersion, ioredisClient, tlsFiles } = require('../lib/protocol');

const which = process.argv[2];

// node_redis 3 connected to the run's server (its own defaults otherwise), once it is ready.
function nodeRedis(setup) {
  const redis = require('redis');
  const tls = tlsFiles(setup);
  const client = redis.createClient(setup.redis_url, tls ? { tls } : {});
  return new Promise((resolve, reject) => {
    const failed = (err) => reject(err);
    client.once('error', failed);
    client.once('ready', () => {
      client.removeListener('error', failed);
      resolve(client);
    });
  }).then((ready) => {
    ready.on('error', (err) => process.stderr.write(`node_redis: ${err.message}\n`));
    return ready;
  });
}

const clients = {
  redis: async (setup) => ({ db: await nodeRedis(setup), client: `redis ${installedVersion(__dirname, 'redis')}` }),
  ioredis: async (setup) => ({
    db: await ioredisClient(require('ioredis'), setup),
    client: `ioredis ${installedVersion(__dirname, 'ioredis')}`,
  }),
};

serve(`ratelimiter ${which}`, async (setup) => {
  const connect = clients[which];
  if (!connect) throw new Error(`argv[2] must be redis or ioredis, not ${which}`);
  // node_redis 3 is told redis_url alone: its handshake says no cluster or Sentinel, so ratelab does not ask it.
  const { db, client } = await connect(setup);
  return {
    library: 'ratelimiter',
    version: installedVersion(__dirname, 'ratelimiter'),
    client,
    // Its entries' scores are the adapter process's Date.now() at load plus process.hrtime() since.
    clock: 'caller',
    check: (key, cost) => {
      if (cost !== 1) throw new Error(`ratelimiter counts requests, not costs: asked for ${cost}`);
      const limit = new Limiter({ id: key, db, max: setup.limit, duration: setup.window_ms });
      limit.key = key; // instead of `limit:${key}` (see above)
      return new Promise((resolve, reject) => {
        limit.get((err, info) => {
          if (err) return reject(err);
          if (info.remaining) return resolve({ allowed: true, remaining: info.remaining - 1 });
          return resolve({ allowed: false, remaining: 0, retry_after_ms: Math.max(0, info.resetMs - Date.now()) });
        });
      });
    },
    close: () => new Promise((resolve) => db.quit(() => resolve())),
  };
});
