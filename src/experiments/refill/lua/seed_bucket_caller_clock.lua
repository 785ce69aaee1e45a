-- Seed 000's token bucket, its clock chosen by the caller: Redis's TIME (the seed's), or `now`
-- passed in by whoever calls (the clock the seed rejected), with the same refill, decision and writes.
-- KEYS[1]  the bucket: a hash {tokens, last_refill}
-- ARGV[1]  capacity   ARGV[2] refill rate, tokens/s   ARGV[3] expiry, ms
-- ARGV[4]  the caller's clock, Unix ms; empty: Redis's TIME
-- Returns {allowed (1|0), tokens remaining (floored)}
local capacity = tonumber(ARGV[1])
local rate     = tonumber(ARGV[2])
local ttl_ms   = tonumber(ARGV[3])
local now      = tonumber(ARGV[4])
if now == nil then
  local t = redis.call('TIME')
  now = (tonumber(t[1]) * 1000) + math.floor(tonumber(t[2]) / 1000)
end

local state       = redis.call('HMGET', KEYS[1], 'tokens', 'last_refill')
local tokens      = tonumber(state[1])
local last_refill = tonumber(state[2])
if tokens == nil or last_refill == nil then
  tokens = capacity
  last_refill = now
end

-- A backwards clock must not mint or destroy tokens (the seed's guard): but a caller behind the
-- last writer still writes its own `now`, so the next caller ahead counts the skew as elapsed.
local elapsed = now - last_refill
if elapsed < 0 then elapsed = 0 end
tokens = math.min(capacity, tokens + (elapsed / 1000) * rate)

if tokens >= 1 then
  tokens = tokens - 1
  redis.call('HSET', KEYS[1], 'tokens', tokens, 'last_refill', now)
  redis.call('PEXPIRE', KEYS[1], ttl_ms)
  return {1, math.floor(tokens)}
end
redis.call('PEXPIRE', KEYS[1], ttl_ms)
return {0, math.floor(tokens)}
