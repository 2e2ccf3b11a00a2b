-- gcra: state "tat"; params interval_s, burst
local interval, burst = tonumber(ARGV[5]), tonumber(ARGV[6])
local tat = now
local stored = redis.call('GET', KEYS[1])
if stored then
  local s = tonumber(stored)
  if s >= now then
    tat = s
  end
end
local tolerance = burst * interval
local c = take((tolerance - (tat - now)) / interval)
local new_tat = tat + c * interval
if new_tat - now <= tolerance then
  save(KEYS[1], fmt(new_tat))
  local remaining = (tolerance - (new_tat - now)) / interval
  return reply(true, math.max(0.0, remaining), 0, new_tat - now, 0, c)
end
-- a rejection stores nothing: the state is unchanged (max(tat, now) is recomputed next time)
local retry = INF
if c <= burst then
  retry = new_tat - tolerance - now
end
return reply(false, math.max(0.0, (tolerance - (tat - now)) / interval), retry, tat - now)
