-- leaky_bucket: state struct '<dd' (debt: µs to drain the level, updated_at µs); params
-- capacity, rate, mode, max_delay_s
local queue, max_delay = mode == 'queue', max_delay_us
local interval, full, t = interval_us, full_us, now_us
local debt = 0.0
local stored = redis.call('GET', KEYS[1])
if stored then
  local stored_debt, updated = struct.unpack('<dd', stored)
  debt = math.max(0.0, stored_debt - math.max(0, t - updated))
end
local c = take((full - debt) / interval)
local need = c * interval
local overflow = debt + need - full
-- like the pure transition, a rejection also stores (debt, now): drained level re-based
if overflow <= 0 then
  debt = debt + need
  save(KEYS[1], struct.pack('<dd', debt, t))
  return struct.pack(REPLY, 1, (full - debt) / interval, 0, debt / 1000000, 0, c)
end
if queue and overflow <= max_delay then
  debt = debt + need
  save(KEYS[1], struct.pack('<dd', debt, t))
  return struct.pack(REPLY, 1, 0, 0, debt / 1000000, overflow / 1000000, c)
end
save(KEYS[1], struct.pack('<dd', debt, t))
local retry
if c > capacity then
  retry = INF
elseif queue then
  retry = math.ceil(overflow - max_delay) / 1000000
else
  retry = math.ceil(overflow) / 1000000
end
return struct.pack(REPLY, 0, math.max(0.0, (full - debt) / interval), retry, debt / 1000000, 0, cost)
