-- An approximated sliding window over two window keys, in the shape several libraries send:
-- the caller names the current and the previous window's counters, and the previous window's
-- count is weighted by how much of it the sliding span still covers.
-- KEYS[1]  the current window's counter
-- KEYS[2]  the previous window's counter
-- ARGV[1]  limit per window
-- ARGV[2]  window in ms
-- ARGV[3]  ms until the current window ends
-- Returns 1 when allowed, 0 when denied.
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local left = tonumber(ARGV[3])

local current = tonumber(redis.call('GET', KEYS[1]) or '0')
local previous = tonumber(redis.call('GET', KEYS[2]) or '0')
local estimate = previous * (left / window) + current
if estimate + 1 > limit then
  return 0
end
redis.call('INCR', KEYS[1])
redis.call('PEXPIRE', KEYS[1], window * 2)
return 1
