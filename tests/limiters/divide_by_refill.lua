-- A token bucket in the shape many libraries send: the key's expiry is the time the bucket takes
-- to fill, capacity / rate, so a rate of 0 makes it infinite and EXPIRE refuses it ("value is not
-- an integer or out of range").
-- KEYS[1]  the bucket (a hash of tokens and the last refill in ms)
-- ARGV[1]  capacity
-- ARGV[2]  refill in tokens per second
-- ARGV[3]  the caller's time in ms
-- Returns 1 when allowed, 0 when denied.
local capacity = tonumber(ARGV[1])
local rate = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
local fill_time = capacity / rate
local ttl = math.floor(fill_time * 2)

local state = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
local tokens = tonumber(state[1]) or capacity
local last = tonumber(state[2]) or now
tokens = math.min(capacity, tokens + math.max(0, now - last) / 1000 * rate)
local allowed = 0
if tokens >= 1 then
  tokens = tokens - 1
  allowed = 1
end
redis.call('HSET', KEYS[1], 'tokens', tokens, 'ts', now)
redis.call('EXPIRE', KEYS[1], ttl)
return allowed
