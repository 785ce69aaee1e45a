-- A token bucket that takes a request's cost in tokens, as libraries with weighted requests do
-- (an upload of 5 MB, a batch of 5 items): a request passes only if all its tokens are there.
-- KEYS[1]  the bucket's tokens
-- ARGV[1]  capacity
-- ARGV[2]  tokens this request takes
-- Returns 1 when allowed, 0 when denied.
local capacity = tonumber(ARGV[1])
local cost = tonumber(ARGV[2])
local tokens = tonumber(redis.call('GET', KEYS[1]) or capacity)
if tokens < cost then
  return 0
end
redis.call('SET', KEYS[1], tokens - cost, 'PX', 600000)
return 1
