-- concurrency release (standalone, no prelude): give back ARGV[1] (struct '<d') slots; unknown
-- keys are ignored; a count back at zero is deleted (equivalent to a fresh key).
local stored = redis.call('GET', KEYS[1])
if not stored then
  return 0
end
local in_flight = math.max(0.0, struct.unpack('<d', stored) - struct.unpack('<d', ARGV[1]))
if in_flight > 0 then
  redis.call('SET', KEYS[1], struct.pack('<d', in_flight), 'KEEPTTL')
else
  redis.call('DEL', KEYS[1])
end
return 1
