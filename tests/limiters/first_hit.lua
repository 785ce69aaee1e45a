-- A fixed window kept by a Redis expiry, the shape of many INCR limiters: the first request sets
-- the counter with the window as its expiry, so each key's window opens at its first request.
-- KEYS[1]  the counter
-- ARGV[1]  limit per window
-- ARGV[2]  window in ms
-- Returns 1 when allowed, 0 when denied.
local limit = tonumber(ARGV[1])
-- Only the first request of a window creates the key, and with it the window's expiry.
redis.call('SET', KEYS[1], 0, 'NX', 'PX', ARGV[2])
local count = redis.call('INCR', KEYS[1])
if count > limit then
  return 0
end
return 1
