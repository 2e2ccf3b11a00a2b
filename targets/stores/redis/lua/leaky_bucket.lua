-- leaky_bucket: state struct '<dd' (level, updated_at); params capacity, rate, mode, max_delay_s
local queue, max_delay = mode == 'queue', max_delay_s
local level = 0.0
local stored = redis.call('GET', KEYS[1])
if stored then
  local stored_level, updated = struct.unpack('<dd', stored)
  level = math.max(0.0, stored_level - math.max(0.0, now - updated) * rate)
end
local c = take(capacity - level)
local overflow = level + c - capacity
-- like the pure transition, a rejection also stores (level, now): drained level re-based
if overflow <= 0 then
  level = level + c
  save(KEYS[1], struct.pack('<dd', level, now))
  return struct.pack(REPLY, 1, capacity - level, 0, level / rate, 0, c)
end
local delay = overflow / rate
if queue and delay <= max_delay then
  level = level + c
  save(KEYS[1], struct.pack('<dd', level, now))
  return struct.pack(REPLY, 1, 0, 0, level / rate, delay, c)
end
save(KEYS[1], struct.pack('<dd', level, now))
local retry
if c > capacity then
  retry = INF
elseif queue then
  retry = delay - max_delay
else
  retry = delay
end
return struct.pack(REPLY, 0, math.max(0.0, capacity - level), retry, level / rate, 0, cost)
