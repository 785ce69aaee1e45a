// @nestjs/throttler 6.7.1's Redis storage, @nest-lab/throttler-storage-redis 1.2.0, on ioredis 6.1.0, called as
// ThrottlerGuard calls it: `storage.increment(key, ttl, limit, blockDuration, throttlerName)` per request, the request
// refused when the record says `isBlocked` (the guard throws ThrottlerException then). Guard defaults: throttler name
// `default`, blockDuration = ttl. increment() is one EVAL (sent whole every time, through ioredis's `call`): INCR of
// a hits key, PEXPIRE of it when it has no expiry (a window opened by the first hit), and once the count passes the
// limit a blocked key SET PX blockDuration; while blocked every request is refused, and when the block has expired
// the hits restart at 1. The guard itself (Nest's DI, the tracker, the sha256 of the route and tracker it uses as the
// key) is not run: the storage gets ratelab's check directly.
// The storage always writes `{<key>:<name>}:hits` and `{<key>:<name>}:blocked`, a hash tag before the key, with no
// prefix option of its own: the adapter gives each ratelab key its own ioredis client (cached by key) with that key as
// ioredis's documented `keyPrefix`, and passes the constant `tracker` as the storage's key, so the Redis keys are
// `<ratelab key>{tracker:default}:hits` and `...:blocked`, under the run's prefix, one slot for both. So one
// connection per ratelab key (one per process in race). Each client gets the run's timeout as its commandTimeout, as
// the other ioredis adapters here, and is a Cluster or a Sentinel client when the setup names one.
// It counts requests, not costs: a check of cost other than 1 is answered as an error.
'use strict';

const Redis = require('ioredis');
const { ThrottlerStorageRedisService } = require('@nest-lab/throttler-storage-redis');
const { serve, installedVersion, tlsFiles, credentials, sentinelNodes } = require('../lib/protocol');

const THROTTLER = 'default';
const TRACKER = 'tracker';

// An ioredis client for the setup's server, cluster or Sentinels (as lib/protocol.js's ioredisClient makes them),
// every key it sends prefixed with `keyPrefix`.
function client(setup, keyPrefix) {
  const options = { commandTimeout: setup.timeout_ms, keyPrefix };
  const tls = tlsFiles(setup);
  if (tls) options.tls = tls;
  let redis;
  if (setup.cluster === true) {
    const url = new URL(setup.redis_url);
    const node = { host: url.hostname, port: Number(url.port || 6379) };
    redis = new Redis.Cluster([node], { keyPrefix, redisOptions: { ...options, ...credentials(setup) } });
  } else if (setup.sentinel) {
    const sentinels = sentinelNodes(setup);
    redis = new Redis({ sentinels, name: setup.sentinel.name, ...options, ...credentials(setup) });
  } else {
    redis = new Redis(setup.redis_url, options);
  }
  redis.on('error', (err) => process.stderr.write(`ioredis: ${err.message}\n`));
  return redis;
}

serve('nestjs-throttler-redis', async (setup) => {
  // Connect once before the handshake, so a server that cannot be reached fails the start.
  const first = client(setup, '');
  await first.ping();
  await first.quit();
  const stores = new Map();
  const storeOf = (key) => {
    if (!stores.has(key)) stores.set(key, new ThrottlerStorageRedisService(client(setup, key)));
    return stores.get(key);
  };
  return {
    library: '@nest-lab/throttler-storage-redis',
    version: installedVersion(__dirname, '@nest-lab/throttler-storage-redis'),
    client: `ioredis ${installedVersion(__dirname, 'ioredis')}, `
      + `@nestjs/throttler ${installedVersion(__dirname, '@nestjs/throttler')}`,
    cluster: setup.cluster === true,
    sentinel: Boolean(setup.sentinel),
    check: async (key, cost) => {
      if (cost !== 1) throw new Error(`@nestjs/throttler counts requests, not costs: asked for ${cost}`);
      const ttl = setup.window_ms;
      const record = await storeOf(key).increment(TRACKER, ttl, setup.limit, ttl, THROTTLER);
      const remaining = Math.max(0, setup.limit - record.totalHits);
      if (!record.isBlocked) return { allowed: true, remaining };
      return { allowed: false, remaining, retry_after_ms: record.timeToBlockExpire * 1000 };
    },
    close: () => Promise.all([...stores.values()].map((store) => store.redis.quit())),
  };
});
