-- sliding_window_counter: state struct '<ddd' (window, prev, curr); params limit, window_s. The
-- TTL (>= 2W) is set by the window's first write: it outlasts the next window, after which the
-- state is as fresh.
local w, t = window_us, now_us
local window = math.floor(t / w)
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
local elapsed = t - start
-- the estimate times W (prev * left + curr * W), compared with L * W: integers for whole counts
local weighted = prev * (w - elapsed)
local c = take(limit - (weighted / w + curr))
if weighted + (curr + c) * w <= limit * w then
  curr = curr + c
  save(KEYS[1], struct.pack('<ddd', window, prev, curr), same_window)
  return struct.pack(REPLY, 1, math.max(0.0, limit - (weighted / w + curr)), 0, ((window + 2) * w - t) / 1000000, 0, c)
end
-- a rejection stores nothing: the rolled-over state it would write is decision-equivalent
local room = limit - curr - c
local retry
if c > limit then
  retry = INF
elseif room >= 0 and prev > 0 then
  retry = (math.ceil(w * (prev - room) / prev) - elapsed) / 1000000
else
  local need = curr - (limit - c)
  local wait = 0
  if need > 0 then
    wait = math.ceil(w * need / curr)
  end
  retry = (start + w + wait - t) / 1000000
end
local reset = 0.0
if curr > 0 then
  reset = ((window + 2) * w - t) / 1000000
elseif prev > 0 then
  reset = ((window + 1) * w - t) / 1000000
end
return struct.pack(REPLY, 0, math.max(0.0, limit - (weighted / w + curr)), retry, reset, 0, cost)
