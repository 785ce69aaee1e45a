-- A fixed window in the shape of many INCR examples: the script builds the window's key itself
-- from KEYS[1] and Redis's clock. Exact under concurrency, but up to twice the limit across a
-- window's edge, and on Redis Cluster the built key is undeclared: it fails for users whose
-- window key hashes to another node ("Script attempted to access a non local key").
-- KEYS[1]  the client's base key
-- ARGV[1]  limit per window
-- ARGV[2]  window in seconds
-- Returns the count in this window (denied ones included).
local window = tonumber(ARGV[2])
local t = redis.call('TIME')
local index = math.floor(tonumber(t[1]) / window)
local key = KEYS[1] .. ':' .. index

local count = redis.call('INCR', key)
if count == 1 then
  redis.call('EXPIRE', key, window * 2)
end
return count
