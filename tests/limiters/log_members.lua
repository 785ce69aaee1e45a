-- A sorted-set log that answers the members it holds after adding this request (the request's own
-- id removed again when the log was already full): its caller reads the decision from the length.
-- KEYS[1]  the log
-- ARGV[1]  limit per window
-- ARGV[2]  window in ms
-- ARGV[3]  the caller's time in ms
-- ARGV[4]  this request's id
-- Returns the log's members.
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local now = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
redis.call('ZADD', KEYS[1], now, ARGV[4])
local members = redis.call('ZRANGE', KEYS[1], 0, -1)
if #members > limit then
  redis.call('ZREM', KEYS[1], ARGV[4])
end
redis.call('PEXPIRE', KEYS[1], window)
return members
