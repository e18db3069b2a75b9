"""The Lua scripts the Redis/Valkey store runs: each one atomic on the server.

Every script reads the server's clock (``TIME``), so replicas never compare their own
clocks. Keys are built inside the scripts from the prefixes of
:class:`~erlmcp_py.core.store_wire.Keys`: the store is one Redis/Valkey server (or a primary with
replicas), not a Redis Cluster.
"""

from __future__ import annotations

__all__ = [
    "ADMIT",
    "BEAT",
    "LIST",
    "PUBLISH",
    "RELEASE",
    "TASK_ANSWER",
    "TASK_DELETE",
    "TASK_LOAD",
    "TASK_PUT",
    "TASK_RELEASE",
    "TICKET",
]

_NOW = """
local t = redis.call('TIME')
local now_us = tonumber(t[1]) * 1000000 + tonumber(t[2])
local now_ms = math.floor(now_us / 1000)
"""

#: The token bucket of ``core.ratelimit`` in microseconds, and the pending caps summed over
#: the live replicas. KEYS: bucket, replicas. ARGV: client, replica, charge (1/0),
#: window_us, rate, capacity_level, client cap, global cap (0: none), pending prefix.
#: Returns {'ok', pending, level} or {limit, value} (``rate``: the wait in microseconds;
#: a cap: the cap).
ADMIT = (
    _NOW
    + """
local client, me, charge = ARGV[1], ARGV[2], ARGV[3] == '1'
local window, rate, cap = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local max_client, max_global, prefix = tonumber(ARGV[7]), tonumber(ARGV[8]), ARGV[9]
local field = 'c:' .. client
local pending, total, seen_me = 0, 0, false
local function count(replica)
  local got = redis.call('HMGET', prefix .. replica, field, '#')
  pending = pending + tonumber(got[1] or '0')
  total = total + tonumber(got[2] or '0')
end
for _, replica in ipairs(redis.call('ZRANGEBYSCORE', KEYS[2], now_ms, '+inf')) do
  if replica == me then seen_me = true end
  count(replica)
end
if not seen_me then count(me) end
if pending >= max_client then return {'client_pending', max_client} end
if max_global > 0 and total >= max_global then return {'global_pending', max_global} end
local level, at = cap, now_us
local bucket = redis.call('HMGET', KEYS[1], 'level', 'at')
if bucket[1] then
  level, at = tonumber(bucket[1]), tonumber(bucket[2])
  if now_us > at then
    local elapsed = math.min(now_us - at, math.ceil(cap / rate) + 1)
    level = math.min(cap, level + elapsed * rate)
    at = now_us
  end
end
if charge then
  if level < window then
    return {'rate', math.ceil((window - level) / rate)}
  end
  level = level - window
  redis.call('HSET', KEYS[1], 'level', level, 'at', at)
  redis.call('PEXPIRE', KEYS[1], math.floor(math.ceil((cap - level) / rate) / 1000) + 1)
end
redis.call('HINCRBY', prefix .. me, field, 1)
redis.call('HINCRBY', prefix .. me, '#', 1)
return {'ok', pending + 1, level}
"""
)

#: Release pending slots of this replica. KEYS: its pending hash. ARGV: client, count, …
#: A count never goes below zero.
RELEASE = """
for i = 1, #ARGV, 2 do
  local field, n = 'c:' .. ARGV[i], tonumber(ARGV[i + 1])
  local have = tonumber(redis.call('HGET', KEYS[1], field) or '0')
  local take = math.min(have, n)
  if take > 0 then
    if have == take then redis.call('HDEL', KEYS[1], field)
    else redis.call('HINCRBY', KEYS[1], field, -take) end
    local left = redis.call('HINCRBY', KEYS[1], '#', -take)
    if left <= 0 then redis.call('HDEL', KEYS[1], '#') end
  end
end
return 1
"""

#: Write records. ARGV: replica, live prefix, record prefix, index prefix, live ttl ms,
#: retention ms, retention count, then id, tenant digest, JSON, terminal (1/0) per record.
PUBLISH = (
    _NOW
    + """
local me, live, rec, idx = ARGV[1], ARGV[2] .. ARGV[1], ARGV[3], ARGV[4]
local live_ttl, keep_ms, keep_n = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
for i = 8, #ARGV, 4 do
  local id, tenant, json, terminal = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3] == '1'
  local key = rec .. id
  redis.call('HSET', key, 'j', json, 'w', now_ms)
  redis.call('HDEL', key, 'dead')
  if terminal then
    redis.call('PEXPIRE', key, keep_ms)
    redis.call('SREM', live, id)
  else
    redis.call('PEXPIRE', key, live_ttl)
    redis.call('SADD', live, id)
  end
  local index = idx .. tenant
  redis.call('ZADD', index, 'NX', now_ms, id)
  local extra = redis.call('ZCARD', index) - keep_n
  if extra > 0 then redis.call('ZREMRANGEBYRANK', index, 0, extra - 1) end
  redis.call('PEXPIRE', index, live_ttl + keep_ms)
end
redis.call('PEXPIRE', live, live_ttl)
return 1
"""
)

#: One tenant's records. KEYS: its index. ARGV: record prefix. Returns id, JSON, wall ms,
#: dead ms (or '') per record; ids whose record expired leave the index.
LIST = """
local out = {}
for _, id in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  local got = redis.call('HMGET', ARGV[1] .. id, 'j', 'w', 'dead')
  if got[1] then
    table.insert(out, id)
    table.insert(out, got[1])
    table.insert(out, got[2])
    table.insert(out, got[3] or '')
  else
    redis.call('ZREM', KEYS[1], id)
  end
end
return out
"""

#: Heartbeat, and the end of the replicas whose heartbeat expired (or of this replica, with
#: ttl 0, when it leaves): their live records are marked dead and kept for the retention
#: period, their pending counts dropped, and their durable tasks become orphans; then a live
#: replica takes over at most ``claim`` orphans (it becomes their holder). KEYS: replicas.
#: ARGV: replica, ttl ms (0: leave), live prefix, record prefix, pending prefix, retention
#: ms, task set prefix, orphans, task prefix, claim, task set ttl ms. Returns {1 if this
#: replica was not registered, {the replicas ended…}, {the tasks it took over…}}.
BEAT = (
    _NOW
    + """
local me, ttl = ARGV[1], tonumber(ARGV[2])
local live, rec, pending, keep_ms = ARGV[3], ARGV[4], ARGV[5], tonumber(ARGV[6])
local taskset, orphans, task = ARGV[7], ARGV[8], ARGV[9]
local claim, set_ttl = tonumber(ARGV[10]), tonumber(ARGV[11])
local registered, ended, claimed = 0, {}, {}
if ttl > 0 then
  registered = redis.call('ZADD', KEYS[1], now_ms + ttl, me)
else
  redis.call('ZADD', KEYS[1], 0, me)
end
for _, replica in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. now_ms)) do
  redis.call('ZREM', KEYS[1], replica)
  for _, id in ipairs(redis.call('SMEMBERS', live .. replica)) do
    local key = rec .. id
    if redis.call('EXISTS', key) == 1 then
      redis.call('HSET', key, 'dead', now_ms)
      redis.call('PEXPIRE', key, keep_ms)
    end
  end
  redis.call('DEL', live .. replica, pending .. replica)
  if redis.call('EXISTS', taskset .. replica) == 1 then
    redis.call('SUNIONSTORE', orphans, orphans, taskset .. replica)
    redis.call('DEL', taskset .. replica)
    redis.call('PEXPIRE', orphans, set_ttl)
  end
  if replica ~= me then table.insert(ended, replica) end
end
if ttl > 0 and claim > 0 then
  for _, id in ipairs(redis.call('SPOP', orphans, claim)) do
    if redis.call('EXISTS', task .. id) == 1 then
      redis.call('HSET', task .. id, 'h', me)
      redis.call('SADD', taskset .. me, id)
      table.insert(claimed, id)
    end
  end
  if #claimed > 0 then redis.call('PEXPIRE', taskset .. me, set_ttl) end
end
return {registered, ended, claimed}
"""
)

#: A hosted page's ticket, one step of its life. KEYS: the ticket. ARGV: the step, then its
#: arguments: ``open`` JSON ttl_ms; ``bind`` elicitation id; ``claim``; ``release``;
#: ``close`` keep_ms. Returns 1 when the step was taken, 0 when the ticket was not in the
#: state it needs (``open`` for bind and claim, bound for claim, ``used`` for release).
TICKET = """
local key, step = KEYS[1], ARGV[1]
if step == 'open' then
  redis.call('HSET', key, 'j', ARGV[2], 's', 'open')
  redis.call('PEXPIRE', key, tonumber(ARGV[3]))
  return 1
end
local got = redis.call('HMGET', key, 's', 'e')
local state, bound = got[1], got[2]
if step == 'bind' then
  if state ~= 'open' then return 0 end
  redis.call('HSET', key, 'e', ARGV[2])
  return 1
elseif step == 'claim' then
  if state ~= 'open' or not bound then return 0 end
  redis.call('HSET', key, 's', 'used')
  return 1
elseif step == 'release' then
  if state ~= 'used' then return 0 end
  redis.call('HSET', key, 's', 'open')
  return 1
elseif step == 'close' then
  if not state or state == 'closed' then return 0 end
  redis.call('DEL', key)
  redis.call('HSET', key, 's', 'closed')
  if bound then redis.call('HSET', key, 'e', bound) end
  redis.call('PEXPIRE', key, tonumber(ARGV[2]))
  return 1
end
return redis.error_reply('unknown ticket step')
"""

#: Write a task's record, fenced: only while this replica holds it (or creating it). KEYS:
#: the task's record, its journal, this replica's task set, the orphans. ARGV: replica, task
#: id, JSON, ttl ms, create (1/0), durable and running (1/0), task set ttl ms, then the
#: answers a creation starts its journal with. Returns 1 when written, 0 when another replica
#: holds the task (or, for a change, the record is gone).
TASK_PUT = """
local me, id = ARGV[1], ARGV[2]
local holder = redis.call('HGET', KEYS[1], 'h')
if holder then
  if holder ~= me then return 0 end
elseif ARGV[5] ~= '1' then
  return 0
end
redis.call('HSET', KEYS[1], 'j', ARGV[3], 'h', me)
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[4]))
if #ARGV > 7 then redis.call('RPUSH', KEYS[2], unpack(ARGV, 8)) end
if redis.call('EXISTS', KEYS[2]) == 1 then redis.call('PEXPIRE', KEYS[2], tonumber(ARGV[4])) end
if ARGV[6] == '1' then
  redis.call('SADD', KEYS[3], id)
  redis.call('PEXPIRE', KEYS[3], tonumber(ARGV[7]))
  redis.call('SREM', KEYS[4], id)
else
  redis.call('SREM', KEYS[3], id)
end
return 1
"""

#: Add answers to a task's journal, fenced; the journal lives as long as the record. KEYS:
#: the task's record, its journal. ARGV: replica, then the answers. Returns 1 or 0.
TASK_ANSWER = """
if redis.call('HGET', KEYS[1], 'h') ~= ARGV[1] then return 0 end
redis.call('RPUSH', KEYS[2], unpack(ARGV, 2))
local ttl = redis.call('PTTL', KEYS[1])
if ttl > 0 then redis.call('PEXPIRE', KEYS[2], ttl) end
return 1
"""

#: A task's record, its holder and its journal. KEYS: the task's record, its journal.
#: Returns {JSON, holder, answers…}, or {} when there is no record.
TASK_LOAD = """
local got = redis.call('HMGET', KEYS[1], 'j', 'h')
if not got[1] then return {} end
local out = {got[1], got[2] or ''}
for _, answer in ipairs(redis.call('LRANGE', KEYS[2], 0, -1)) do table.insert(out, answer) end
return out
"""

#: Forget a task, unless another replica holds it. KEYS: the task's record, its journal, this
#: replica's task set. ARGV: replica, task id. Returns 1 when forgotten.
TASK_DELETE = """
local holder = redis.call('HGET', KEYS[1], 'h')
if holder and holder ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1], KEYS[2])
redis.call('SREM', KEYS[3], ARGV[2])
return 1
"""

#: Give back a task this replica took over and cannot run: an orphan again. KEYS: the task's
#: record, this replica's task set, the orphans. ARGV: replica, task id, task set ttl ms.
TASK_RELEASE = """
if redis.call('HGET', KEYS[1], 'h') ~= ARGV[1] then return 0 end
redis.call('SREM', KEYS[2], ARGV[2])
redis.call('SADD', KEYS[3], ARGV[2])
redis.call('PEXPIRE', KEYS[3], tonumber(ARGV[3]))
return 1
"""
