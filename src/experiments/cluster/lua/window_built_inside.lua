-- Fixed window whose counter is named INSIDE the script, from KEYS[1]: the key Redis Cluster
-- routes and checks is the user's base key, while the key written is one the caller never declared.
-- KEYS[1]  the user's base key (never read or written itself)
-- ARGV[1]  limit: requests allowed per window
-- ARGV[2]  expiry in ms, set by the request that creates the counter
-- ARGV[3]  ms until this window ends, handed back as the retry hint when denied
-- ARGV[4]  the window's name (`w<index>`); the counter is KEYS[1] .. ':' .. ARGV[4]
-- Returns {allowed (1|0), requests left in the window, retry after ms (0 when allowed)}
local counter = KEYS[1] .. ':' .. ARGV[4]
local limit = tonumber(ARGV[1])

local count = redis.call('INCR', counter)
if count == 1 then
  redis.call('PEXPIRE', counter, ARGV[2])
end

if count <= limit then
  return {1, limit - count, 0}
end
return {0, 0, tonumber(ARGV[3])}
