-- A fixed-window counter on the caller's window key, to be invoked in each of a library's ways.
-- KEYS[1]  the window's counter
-- ARGV[1]  limit per window
-- ARGV[2]  window in ms
-- Returns 1 when allowed, 0 when denied.
local count = redis.call('INCR', KEYS[1])
if count == 1 then
  redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]) * 2)
end
if count > tonumber(ARGV[1]) then
  return 0
end
return 1
