-- sliding_window_counter: state struct '<ddd' (window, prev, curr); params limit, window_s. The
-- TTL (>= 2W) is set by the window's first write: it outlasts the next window, after which the
-- state is as fresh.
local w = window_s
local window = math.floor(now / w)
local prev, curr = 0, 0
local same_window = false
local stored = redis.call('GET', KEYS[1])
if stored then
  local stored_window, stored_prev, stored_curr = struct.unpack('<ddd', stored)
  if stored_window == window then
    prev, curr, same_window = stored_prev, stored_curr, true
  elseif stored_window == window - 1 then
    prev = stored_curr
  end
end
local start = window * w
local estimate = prev * (1.0 - (now - start) / w) + curr
local c = take(limit - estimate)
if estimate + c <= limit then
  curr = curr + c
  estimate = estimate + c
  save(KEYS[1], struct.pack('<ddd', window, prev, curr), same_window)
  return struct.pack(REPLY, 1, math.max(0.0, limit - estimate), 0, (window + 2) * w - now, 0, c)
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
return struct.pack(REPLY, 0, math.max(0.0, limit - estimate), retry, reset, 0, cost)
