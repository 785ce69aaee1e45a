// Seed 001's middleware as an adapter, on the seed's own client, ioredis (library defaults: its
// offline queue and reconnects; commandTimeout is the run's timeout). argv[2] picks the limiter:
//   naive  the old middleware: GET the window's counter, decide in JavaScript, then
//          MULTI INCR EXPIRE (the seed keys windows on floor(now / window) and expires them after two);
//   lua    the fix: the token bucket decided in one script with Redis's TIME, defined with ioredis's
//          defineCommand (EVALSHA, EVAL on NOSCRIPT); ratelab's src/limiter/lua/token_bucket.lua is
//          that script, so the two runs differ only in the client.
'use strict';

const fs = require('node:fs');
const path = require('node:path');
const Redis = require('ioredis');
const { serve, installedVersion, ioredisClient } = require('../lib/protocol');

const BUCKET = fs.readFileSync(path.join(__dirname, '../../../src/limiter/lua/token_bucket.lua'), 'utf8');

async function naiveCheck(redis, setup, key, cost) {
  const windowKey = `${key}:${Math.floor(Date.now() / setup.window_ms)}`;
  const used = Number(await redis.get(windowKey)) || 0;
  if (used + cost > setup.limit) return { allowed: false, remaining: Math.max(0, setup.limit - used) };
  const expirySeconds = Math.ceil((2 * setup.window_ms) / 1000);
  await redis.multi().incrby(windowKey, cost).expire(windowKey, expirySeconds).exec();
  return { allowed: true, remaining: Math.max(0, setup.limit - used - cost) };
}

async function luaCheck(redis, setup, key, cost) {
  const ttlMs = setup.refill_per_s > 0 ? Math.ceil((setup.limit / setup.refill_per_s) * 1000) + 1000 : 600000;
  const reply = await redis.bucket(key, setup.limit, setup.refill_per_s, cost, ttlMs);
  const [allowed, remaining, retry] = reply.map(Number);
  return allowed === 1 ? { allowed: true, remaining } : { allowed: false, remaining, retry_after_ms: retry };
}

const limiters = { naive: naiveCheck, lua: luaCheck };
const mode = process.argv[2];

serve(`seed001 ${mode}`, async (setup) => {
  const decide = limiters[mode];
  if (!decide) throw new Error(`argv[2] must be naive or lua, not ${mode}`);
  const redis = await ioredisClient(Redis, setup);
  redis.defineCommand('bucket', { numberOfKeys: 1, lua: BUCKET });
  return {
    library: 'seed 001 middleware',
    version: mode,
    client: `ioredis ${installedVersion(__dirname, 'ioredis')}`,
    check: (key, cost) => decide(redis, setup, key, cost),
    close: () => redis.quit(),
  };
});
