-- A fixed window that answers, with its decision, the seconds until it reopens (the unit of an
-- HTTP Retry-After header), rounded up.
-- KEYS[1]  the counter
-- ARGV[1]  limit per window
-- ARGV[2]  window in ms
-- Returns {1 or 0, seconds until the window ends}.
local limit = tonumber(ARGV[1])
redis.call('SET', KEYS[1], 0, 'NX', 'PX', ARGV[2])
local count = redis.call('INCR', KEYS[1])
local seconds = math.ceil(redis.call('PTTL', KEYS[1]) / 1000)
if count > limit then
  return {0, seconds}
end
return {1, seconds}
