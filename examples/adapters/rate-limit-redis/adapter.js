// rate-limit-redis, the Redis store of express-rate-limit, called as express-rate-limit calls it:
// init({ windowMs }) once, then increment(key) per request (one EVALSHA of its script, reloaded on
// NOSCRIPT) and the request passes while totalHits <= limit. Its commands go through ioredis's
// `call`. It has no cost: a check of cost other than 1 is answered as an error.
'use strict';

const Redis = require('ioredis');
const { RedisStore } = require('rate-limit-redis');
const { serve, installedVersion, ioredisClient } = require('../lib/protocol');

serve('rate-limit-redis', async (setup) => {
  const client = await ioredisClient(Redis, setup);
  // An empty prefix: the Redis key is ratelab's key itself, under the run's prefix.
  const store = new RedisStore({ sendCommand: (command, ...args) => client.call(command, ...args), prefix: '' });
  await store.init({ windowMs: setup.window_ms });
  return {
    library: 'rate-limit-redis',
    version: installedVersion(__dirname, 'rate-limit-redis'),
    client: `ioredis ${installedVersion(__dirname, 'ioredis')}`,
    check: async (key, cost) => {
      if (cost !== 1) throw new Error(`rate-limit-redis counts requests, not costs: asked for ${cost}`);
      const { totalHits, resetTime } = await store.increment(key);
      const allowed = totalHits <= setup.limit;
      const remaining = Math.max(0, setup.limit - totalHits);
      if (allowed) return { allowed, remaining };
      return { allowed, remaining, retry_after_ms: Math.max(0, resetTime - Date.now()) };
    },
    close: () => client.quit(),
  };
});
