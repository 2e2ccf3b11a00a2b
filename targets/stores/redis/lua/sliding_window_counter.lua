-- sliding_window_counter: state "window prev curr"; params limit, window_s
local limit, w = tonumber(ARGV[5]), tonumber(ARGV[6])
local window = math.floor(now / w)
local prev, curr = 0, 0
local stored = redis.call('GET', KEYS[1])
if stored then
  local s = fields(stored)
  if s[1] == window then
    prev, curr = s[2], s[3]
  elseif s[1] == window - 1 then
    prev = s[3]
  end
end
local start = window * w
local estimate = prev * (1.0 - (now - start) / w) + curr
local c = take(limit - estimate)
if estimate + c <= limit then
  curr = curr + c
  estimate = estimate + c
  save(KEYS[1], fmt(window) .. ' ' .. fmt(prev) .. ' ' .. fmt(curr))
  return reply(true, math.max(0.0, limit - estimate), 0, (window + 2) * w - now, 0, c)
end
-- a rejection stores nothing: the rolled-over state it would write is decision-equivalent
local room = limit - curr - c
local retry
if c > limit then
  retry = INF
elseif room >= 0 and prev > 0 then
  retry = start + w * (1.0 - room / prev) - now
else
  local need = 0.0
  if curr > 0 then
    need = 1.0 - (limit - c) / curr
  end
  retry = start + w + w * math.max(0.0, need) - now
end
local reset = 0.0
if curr > 0 then
  reset = (window + 2) * w - now
elseif prev > 0 then
  reset = (window + 1) * w - now
end
return reply(false, math.max(0.0, limit - estimate), retry, reset)
