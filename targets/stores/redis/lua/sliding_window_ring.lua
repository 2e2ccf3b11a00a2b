-- sliding_window_ring: state struct '<d' total, then '<dd' (id, cost) per live sub-window,
-- oldest first; params limit, window_s, buckets
local n, width, t = buckets, width_us, now_us
local sub = math.floor(t / width)
local ids, costs, total = {}, {}, 0.0
local pruned = false
local stored = redis.call('GET', KEYS[1])
if stored then
  total = struct.unpack('<d', stored)
  local oldest_alive = sub - n + 1
  for pos = 9, #stored, 16 do
    local id, cost_i = struct.unpack('<dd', stored, pos)
    if id < oldest_alive and #ids == 0 then
      total = total - cost_i -- same subtractions, same order, as the pure transition
      pruned = true
    else
      ids[#ids + 1], costs[#costs + 1] = id, cost_i
    end
  end
  if pruned and #ids == 0 then
    total = 0.0
  end
end

local function encode()
  local parts = {struct.pack('<d', total)}
  for i = 1, #ids do
    parts[#parts + 1] = struct.pack('<dd', ids[i], costs[i])
  end
  return table.concat(parts)
end

local c = take(limit - total)
if total + c <= limit then
  if #ids > 0 and ids[#ids] == sub then
    costs[#costs] = costs[#costs] + c
  else
    ids[#ids + 1], costs[#costs + 1] = sub, c
  end
  total = total + c
  save(KEYS[1], encode())
  return struct.pack(REPLY, 1, limit - total, 0, ((ids[#ids] + n) * width - t) / 1000000, 0, c)
end
if pruned then
  save(KEYS[1], encode())
end
local retry = INF
if c <= limit then
  local must_expire = total + c - limit
  local freed = 0.0
  for i = 1, #ids do
    freed = freed + costs[i]
    if freed >= must_expire then
      retry = math.ceil((ids[i] + n) * width - t) / 1000000
      break
    end
  end
end
local reset = 0.0
if #ids > 0 then
  reset = ((ids[#ids] + n) * width - t) / 1000000
end
return struct.pack(REPLY, 0, math.max(0.0, limit - total), retry, reset, 0, cost)
