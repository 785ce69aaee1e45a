-- A fixed window opened by the first request whose key expires after a minute whatever window
-- it was configured with (a library's default window written into its expiry): configured for
-- longer, the count is gone before its window ends and the next requests start a new one.
-- KEYS[1]  the counter
-- ARGV[1]  limit per window
-- Returns 1 when allowed, 0 when denied.
local limit = tonumber(ARGV[1])
redis.call('SET', KEYS[1], 0, 'NX', 'EX', 60)
local count = redis.call('INCR', KEYS[1])
if count > limit then
  return 0
end
return 1
