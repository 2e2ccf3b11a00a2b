-- leaky_bucket: state "level updated_at"; params capacity, rate, mode, max_delay_s
local capacity, rate = tonumber(ARGV[5]), tonumber(ARGV[6])
local queue, max_delay = ARGV[7] == 'queue', tonumber(ARGV[8])
local level = 0.0
local stored = redis.call('GET', KEYS[1])
if stored then
  local s = fields(stored)
  level = math.max(0.0, s[1] - math.max(0.0, now - s[2]) * rate)
end
local c = take(capacity - level)
local overflow = level + c - capacity
-- like the pure transition, a rejection also stores (level, now): drained level re-based
if overflow <= 0 then
  level = level + c
  save(KEYS[1], fmt(level) .. ' ' .. fmt(now))
  return reply(true, capacity - level, 0, level / rate, 0, c)
end
local delay = overflow / rate
if queue and delay <= max_delay then
  level = level + c
  save(KEYS[1], fmt(level) .. ' ' .. fmt(now))
  return reply(true, 0, 0, level / rate, delay, c)
end
save(KEYS[1], fmt(level) .. ' ' .. fmt(now))
local retry
if c > capacity then
  retry = INF
elseif queue then
  retry = delay - max_delay
else
  retry = delay
end
return reply(false, math.max(0.0, capacity - level), retry, level / rate)
