#!lua name=examplegcra
-- GCRA with Redis's TIME, as a function library (FUNCTION LOAD): kept in the RDB and replicated,
-- so it survives a restart where a cached script does not. Expected exact, Cluster-safe (one
-- declared key) and to survive SCRIPT FLUSH and restarts.
-- FCALL gcra_time 1 <key> <limit> <window in ms>
-- Returns 0 when allowed, else the ms to wait.
local function gcra_time(KEYS, ARGV)
  local limit  = tonumber(ARGV[1])
  local window = tonumber(ARGV[2]) * 1000
  local emission = window / limit
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
  local tat = tonumber(redis.call('GET', KEYS[1])) or now
  if tat < now then
    tat = now
  end
  local allow_at = tat + emission - emission * limit
  if now < allow_at then
    return math.ceil((allow_at - now) / 1000)
  end
  local new_tat = tat + emission
  redis.call('SET', KEYS[1], string.format('%.0f', new_tat), 'PX', math.ceil((new_tat - now) / 1000) + 1)
  return 0
end

redis.register_function('gcra_time', gcra_time)
