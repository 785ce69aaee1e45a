-- A sliding log in the shape many blog posts and small libraries publish: the caller sends its
-- clock, and the entry's member IS that time in ms. Two requests in the same ms share one entry,
-- so under load the log undercounts and admits more than the limit (seed 002's timestamp bug).
-- KEYS[1]  the log
-- ARGV[1]  the caller's time in ms
-- ARGV[2]  window in ms
-- ARGV[3]  limit
-- Returns false (nil) when allowed, the count in the window when denied.
local now    = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local limit  = tonumber(ARGV[3])

redis.call('ZREMRANGEBYSCORE', KEYS[1], 0, now - window)
local count = redis.call('ZCARD', KEYS[1])
if count >= limit then
  return count
end
redis.call('ZADD', KEYS[1], now, now)
redis.call('PEXPIRE', KEYS[1], window)
return false
