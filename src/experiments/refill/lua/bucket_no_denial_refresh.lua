-- ratelab's token bucket (src/limiter/lua/token_bucket.lua) without the one line seed 000 took a
-- while to find: a denial leaves the expiry alone. A client hammering an empty bucket then lets
-- it expire, if the expiry is shorter than the wait for a token, and gets a fresh, full one.
-- KEYS[1]  the bucket: a hash {tokens, ts}
-- ARGV[1]  capacity   ARGV[2] refill rate, tokens/s   ARGV[3] expiry, ms
-- Returns {allowed (1|0), tokens remaining (floored)}
local capacity = tonumber(ARGV[1])
local rate     = tonumber(ARGV[2])
local ttl_ms   = tonumber(ARGV[3])

local t   = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local state  = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
local tokens = tonumber(state[1])
local ts     = tonumber(state[2])
if tokens == nil or ts == nil then
  tokens = capacity
  ts = now
end
local elapsed = now - ts
if elapsed < 0 then
  elapsed = 0
end
tokens = math.min(capacity, tokens + elapsed * rate / 1000)

if tokens >= 1 then
  tokens = tokens - 1
  redis.call('HSET', KEYS[1], 'tokens', tokens, 'ts', math.max(ts, now))
  redis.call('PEXPIRE', KEYS[1], ttl_ms)
  return {1, math.floor(tokens)}
end
return {0, math.floor(tokens)}
