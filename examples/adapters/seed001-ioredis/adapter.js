// Seed 001's middleware as an adapter, on the seed's own client, ioredis (library defaults: its
// offline queue and reconnects; commandTimeout is the run's timeout). argv[2] picks the limiter:
//   naive  the old middleware: GET the window's counter, decide in JavaScript, then
//          MULTI INCR EXPIRE (the seed keys windows on floor(now / window) and expires them after two);
//   lua    the fix: the seed's token_bucket.lua (this folder's, extracted from the write-up byte for
//          byte: tests/seed_code.rs) called as limiter.ts's take() calls it, on ioredis's defineCommand
//          (EVALSHA, EVAL on NOSCRIPT) with the bucket's capacity, its rate and 1 token per request.
//          The script divides by the rate for its expiry, so a bucket that never refills cannot use it
//          as written: with a rate of 0 it runs with that one line changed (VARIANT below), and says so.
'use strict';

const fs = require('node:fs');
const path = require('node:path');
const Redis = require('ioredis');
const { serve, installedVersion, ioredisClient } = require('../lib/protocol');

const SEED_SCRIPT = fs.readFileSync(path.join(__dirname, 'token_bucket.lua'), 'utf8');
// The seed's expiry line and the one change that lets a bucket with a rate of 0 run: capacity * 1000 / 0
// is inf, which PEXPIRE refuses ("value is not an integer"); the variant keeps such a bucket 10 minutes.
const EXPIRY = "redis.call('PEXPIRE', KEYS[1], math.ceil(capacity * 1000 / rate) + 1000)";
const VARIANT_EXPIRY =
  "redis.call('PEXPIRE', KEYS[1], rate > 0 and math.ceil(capacity * 1000 / rate) + 1000 or 600000)";
if (!SEED_SCRIPT.includes(EXPIRY)) throw new Error(`token_bucket.lua lacks the seed's expiry line: ${EXPIRY}`);

async function naiveCheck(redis, setup, key, cost) {
  const windowKey = `${key}:${Math.floor(Date.now() / setup.window_ms)}`;
  const used = Number(await redis.get(windowKey)) || 0;
  if (used + cost > setup.limit) return { allowed: false, remaining: Math.max(0, setup.limit - used) };
  const expirySeconds = Math.ceil((2 * setup.window_ms) / 1000);
  await redis.multi().incrby(windowKey, cost).expire(windowKey, expirySeconds).exec();
  return { allowed: true, remaining: Math.max(0, setup.limit - used - cost) };
}

// limiter.ts's take(): the bucket key, capacity, rate and 1; the seed's reply is {allowed, retry_ms}. At a
// rate of 0 the script's retry_ms divides by zero too, and Redis turns the inf into the lowest integer: no
// retry time is given then.
async function luaCheck(redis, setup, key, cost) {
  const [allowed, retryMs] = (await redis.tokenBucket(key, setup.limit, setup.refill_per_s, cost)).map(Number);
  if (allowed === 1) return { allowed: true };
  const told = Number.isSafeInteger(retryMs) && retryMs >= 0;
  return told ? { allowed: false, retry_after_ms: retryMs } : { allowed: false };
}

const limiters = { naive: naiveCheck, lua: luaCheck };
const mode = process.argv[2];

serve(`seed001 ${mode}`, async (setup) => {
  const decide = limiters[mode];
  if (!decide) throw new Error(`argv[2] must be naive or lua, not ${mode}`);
  const redis = await ioredisClient(Redis, setup);
  const variant = mode === 'lua' && !(setup.refill_per_s > 0);
  const lua = variant ? SEED_SCRIPT.replace(EXPIRY, VARIANT_EXPIRY) : SEED_SCRIPT;
  redis.defineCommand('tokenBucket', { numberOfKeys: 1, lua });
  return {
    library: 'seed 001 middleware',
    version: variant ? `${mode} (the seed's script, its expiry changed for a rate of 0)` : mode,
    client: `ioredis ${installedVersion(__dirname, 'ioredis')}`,
    check: (key, cost) => decide(redis, setup, key, cost),
    close: () => redis.quit(),
  };
});
