-- Sliding-window counter: two fixed windows, the previous one weighted by the share of it the
-- sliding window still covers. Two integers per client instead of one log entry per request.
-- KEYS[1]  a hash {w = index of the current window, cur = its count, prev = the previous one's}
-- ARGV[1]  limit: requests allowed in any window
-- ARGV[2]  window in ms
-- ARGV[3]  start of window 0, in Unix ms
-- Returns {allowed (1|0), requests left by the estimate (floored), retry after ms (0 when allowed)}
local limit  = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local origin = tonumber(ARGV[3])

-- One clock for every caller: Redis's own, as in the token bucket.
local t   = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local since   = math.max(0, now - origin)
local index   = math.floor(since / window)
local elapsed = since - index * window

local state = redis.call('HMGET', KEYS[1], 'w', 'cur', 'prev')
local w    = tonumber(state[1])
local cur  = tonumber(state[2]) or 0
local prev = tonumber(state[3]) or 0
if w == nil then
  cur, prev = 0, 0
elseif index == w + 1 then
  prev, cur = cur, 0
elseif index > w + 1 then
  prev, cur = 0, 0
elseif index < w then
  -- Redis's clock went back (say, a failover to a replica behind it): stay at the start of the
  -- stored window, where the previous one weighs fully, so a step back never admits more.
  index, elapsed = w, 0
end

local estimate = prev * (window - elapsed) / window + cur
if estimate < limit then
  cur = cur + 1
  redis.call('HSET', KEYS[1], 'w', index, 'cur', cur, 'prev', prev)
  -- Idle for two windows, both counts are stale and the key carries no information.
  redis.call('PEXPIRE', KEYS[1], 2 * window)
  return {1, math.max(0, math.floor(limit - estimate - 1)), 0}
end

-- Denied: nothing is written. Retry when the estimate falls below the limit, if nobody else asks.
local retry_ms
if cur >= limit then
  -- Not even in the next window, where this one weighs fully at first: wait until enough of it
  -- has slid out.
  retry_ms = (window - elapsed) + math.floor(window * (1 - limit / cur)) + 1
else
  retry_ms = math.floor(window - (limit - cur) * window / prev) + 1 - elapsed
end
return {0, 0, math.max(1, retry_ms)}
