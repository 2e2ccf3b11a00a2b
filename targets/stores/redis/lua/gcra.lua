-- gcra: state struct '<d' (tat); params interval_s, burst
local interval = interval_s
local tat = now
local stored = redis.call('GET', KEYS[1])
if stored then
  local s = struct.unpack('<d', stored)
  if s >= now then
    tat = s
  end
end
local tolerance = burst * interval
local c = take((tolerance - (tat - now)) / interval)
local new_tat = tat + c * interval
if new_tat - now <= tolerance then
  save(KEYS[1], struct.pack('<d', new_tat))
  local remaining = (tolerance - (new_tat - now)) / interval
  return struct.pack(REPLY, 1, math.max(0.0, remaining), 0, new_tat - now, 0, c)
end
-- a rejection stores nothing: the state is unchanged (max(tat, now) is recomputed next time)
local retry = INF
if c <= burst then
  retry = new_tat - tolerance - now
end
return struct.pack(REPLY, 0, math.max(0.0, (tolerance - (tat - now)) / interval), retry, tat - now, 0, cost)
