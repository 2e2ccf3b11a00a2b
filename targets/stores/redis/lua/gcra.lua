-- gcra: state struct '<d' (tat, µs); params interval_s, burst
local interval, tolerance = interval_us, tolerance_us
local t = now_us
local tat = t
local stored = redis.call('GET', KEYS[1])
if stored then
  local s = struct.unpack('<d', stored)
  if s >= t then
    tat = s
  end
end
local c = take((tolerance - (tat - t)) / interval)
local new_tat = tat + c * interval
if new_tat - t <= tolerance then
  save(KEYS[1], struct.pack('<d', new_tat))
  local remaining = (tolerance - (new_tat - t)) / interval
  return struct.pack(REPLY, 1, math.max(0.0, remaining), 0, (new_tat - t) / 1000000, 0, c)
end
-- a rejection stores nothing: the state is unchanged (max(tat, now) is recomputed next time)
local retry = INF
if c <= burst then
  retry = math.ceil(new_tat - tolerance - t) / 1000000
end
return struct.pack(REPLY, 0, math.max(0.0, (tolerance - (tat - t)) / interval), retry, (tat - t) / 1000000, 0, cost)
