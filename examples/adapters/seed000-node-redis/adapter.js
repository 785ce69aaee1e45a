// Seed 000's Express middleware as an adapter, on the seed's own client: node-redis with its offline
// queue disabled ("what makes a dead Redis fail fast") and a budget of the run's timeout around every
// check ("RedisStore gives every check a 250 ms budget"); on a failure it answers an error and the
// experiment's fail-open or fail-closed reading applies. argv[2] picks the limiter:
//   lua    the token bucket decided in one script with Redis's TIME: ratelab's src/limiter/lua/token_bucket.lua,
//          not the seed's (seed 000 publishes the first half of its script and the rule for the rest), so
//          this run and ratelab's lua-bucket differ only in the client; EVALSHA with EVAL on NOSCRIPT, so a
//          restarted Redis gets the script again;
//   naive  the seed's naiveCheck: HMGET the tokens, decide in JavaScript, HSET them back.
// argv[3] `queue` leaves node-redis's offline queue on, as the client has it by default: the seed turned it
// off because "that queue is what once let a Redis blip hang every request indefinitely".
'use strict';

const fs = require('node:fs');
const path = require('node:path');
const { createHash } = require('node:crypto');
const redis = require('redis');
const { serve, installedVersion, within, nodeRedisClient } = require('../lib/protocol');

const BUCKET = fs.readFileSync(path.join(__dirname, '../../../src/limiter/lua/token_bucket.lua'), 'utf8');
const BUCKET_SHA = createHash('sha1').update(BUCKET).digest('hex');

// The bucket's expiry as ratelab's own callers derive it: one refill of the whole bucket and a second.
function bucketTtlMs(setup) {
  return setup.refill_per_s > 0 ? Math.ceil((setup.limit / setup.refill_per_s) * 1000) + 1000 : 600000;
}

async function luaCheck(client, setup, key, cost) {
  const options = {
    keys: [key],
    arguments: [String(setup.limit), String(setup.refill_per_s), String(cost), String(bucketTtlMs(setup))],
  };
  let reply;
  try {
    reply = await client.evalSha(BUCKET_SHA, options);
  } catch (err) {
    if (!/^NOSCRIPT/.test(String(err.message))) throw err;
    reply = await client.eval(BUCKET, options);
  }
  const [allowed, remaining, retry] = reply.map(Number);
  return allowed === 1 ? { allowed: true, remaining } : { allowed: false, remaining, retry_after_ms: retry };
}

// The seed's naiveCheck, with the run's capacity for K and the check's cost for its 1.
async function naiveCheck(client, setup, key, cost) {
  const [tokens] = await client.hmGet(key, ['tokens']);
  const t = tokens === null ? setup.limit : Number(tokens);
  if (t < cost) return { allowed: false, remaining: t };
  await client.hSet(key, { tokens: String(t - cost) });
  return { allowed: true, remaining: t - cost };
}

const limiters = { lua: luaCheck, naive: naiveCheck };
const mode = process.argv[2];
const queue = process.argv[3] === 'queue';

// node-redis's client for what the setup names: a cluster's, started from the one node it was told
// (it reads the slot map and sends each key's commands to the node owning it, every node's client
// with the same options); one that asks the Sentinels for the primary, and again after losing it; or
// a plain one.
async function connect(setup) {
  return nodeRedisClient(redis, setup, { disableOfflineQueue: !queue });
}

serve(`seed000 ${mode}${queue ? ' queue' : ''}`, async (setup) => {
  const decide = limiters[mode];
  if (!decide) throw new Error(`argv[2] must be lua or naive, not ${mode}`);
  const client = await connect(setup);
  return {
    library: 'seed 000 middleware',
    version: queue ? `${mode}, offline queue on` : mode,
    client: `node-redis ${installedVersion(__dirname, 'redis')}`,
    cluster: setup.cluster === true,
    sentinel: Boolean(setup.sentinel),
    check: (key, cost) => within(setup.timeout_ms, decide(client, setup, key, cost)),
    close: () => client.close(),
  };
});
