-- Token bucket, decided entirely inside Redis so read, refill, decide and write are one step.
-- KEYS[1]  the bucket: a hash {tokens, ts}
-- ARGV[1]  capacity: the most tokens the bucket holds
-- ARGV[2]  refill rate in tokens per second (0: never refills)
-- ARGV[3]  cost: tokens this request spends
-- ARGV[4]  expiry in ms, refreshed on every call (the caller derives it from capacity / rate)
-- Returns {allowed (1|0), tokens remaining (floored), retry after ms (-1: never)}
local capacity = tonumber(ARGV[1])
local rate     = tonumber(ARGV[2])
local cost     = tonumber(ARGV[3])
local ttl_ms   = tonumber(ARGV[4])

-- One clock for every caller: Redis's own. Scripts replicate by effects, so this is safe.
local t   = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local state  = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
local tokens = tonumber(state[1])
local ts     = tonumber(state[2])
if tokens == nil or ts == nil then
  tokens = capacity
  ts = now
end

-- A clock that went backwards mints nothing, now or later: elapsed is clamped and the stored
-- timestamp never moves back.
local elapsed = now - ts
if elapsed < 0 then
  elapsed = 0
end
tokens = math.min(capacity, tokens + elapsed * rate / 1000)

if tokens >= cost then
  tokens = tokens - cost
  redis.call('HSET', KEYS[1], 'tokens', tokens, 'ts', math.max(ts, now))
  redis.call('PEXPIRE', KEYS[1], ttl_ms)
  return {1, math.floor(tokens), 0}
end

-- Denied: nothing was spent, so the state stays; the expiry is still refreshed, or a client
-- hammering an empty bucket would be handed a fresh, full one once it expired.
redis.call('PEXPIRE', KEYS[1], ttl_ms)
local retry_ms = -1
if rate > 0 then
  retry_ms = math.ceil((cost - tokens) * 1000 / rate)
end
return {0, math.floor(tokens), retry_ms}
