-- A fixed window as libraries key it: the library's own key prefix before the client's key, a
-- global counter shared by every client, and a block-list key passed as '' when the feature is off.
-- KEYS[1]  the client's counter ("rate:" .. key)
-- KEYS[2]  the counter of all clients
-- KEYS[3]  the block list, or '' when disabled
-- ARGV[1]  limit per window
-- ARGV[2]  window in ms
-- Returns 1 when allowed, 0 when denied.
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
if KEYS[3] ~= '' and redis.call('SISMEMBER', KEYS[3], KEYS[1]) == 1 then
  return 0
end
local count = redis.call('INCR', KEYS[1])
if count == 1 then
  redis.call('PEXPIRE', KEYS[1], window)
end
redis.call('INCR', KEYS[2])
redis.call('PEXPIRE', KEYS[2], window)
if count > limit then
  return 0
end
return 1
