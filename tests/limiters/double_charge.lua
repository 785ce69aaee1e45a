-- A token bucket that charges a request twice, once when it checks and once when it records:
-- the bug of a check and a commit written apart. It never admits more than its capacity, and
-- admits only half of it.
-- KEYS[1]  the bucket's tokens
-- ARGV[1]  capacity
-- Returns 1 when allowed, 0 when denied.
local capacity = tonumber(ARGV[1])
local tokens = tonumber(redis.call('GET', KEYS[1]) or capacity)
if tokens < 1 then
  return 0
end
tokens = tokens - 1
-- the commit, charging the same request again
tokens = tokens - 1
redis.call('SET', KEYS[1], tokens, 'PX', 600000)
return 1
