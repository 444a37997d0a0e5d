// SPDX-License-Identifier: Apache-2.0
#pragma once
// Lua scripts the Redis counters share (EVAL: each runs atomically on the server).
namespace llmux::state::scripts {

/// KEYS[1] counter; ARGV[1] amount, ARGV[2] expiry (ms). INCRBY, and the expiry set when the key
/// has none (the first increment of a window, or a key that lost it), in one step; returns the
/// new total.
inline constexpr const char* kIncrWindow =
    "local v = redis.call('INCRBY', KEYS[1], ARGV[1])\n"
    "if redis.call('PTTL', KEYS[1]) < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end\n"
    "return v\n";

/// KEYS[1] hash; ARGV[1] field, ARGV[2] amount, ARGV[3] expiry (ms): HINCRBY, the expiry set
/// when the hash has none.
inline constexpr const char* kHincrTtl =
    "local v = redis.call('HINCRBY', KEYS[1], ARGV[1], ARGV[2])\n"
    "if redis.call('PTTL', KEYS[1]) < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[3]) end\n"
    "return v\n";

/// Exactly-once hash increments, by strict succession per sender: KEYS[1] the hash, KEYS[2] the
/// sender's sequence key; ARGV[1] seq, ARGV[2] the hash's expiry, ARGV[3] the sequence key's,
/// then field/amount pairs. Applied only when seq follows the last applied one (returns 1); a
/// seq already applied returns 2 (a resend: nothing done); one past a gap returns 0 (nothing
/// done: the sender counts it again under a new sequence).
inline constexpr const char* kHincrSeq =
    "local last = tonumber(redis.call('GET', KEYS[2]) or '0')\n"
    "local seq = tonumber(ARGV[1])\n"
    "if seq <= last then return 2 end\n"
    "if seq ~= last + 1 then return 0 end\n"
    "for i = 4, #ARGV, 2 do redis.call('HINCRBY', KEYS[1], ARGV[i], ARGV[i + 1]) end\n"
    "if redis.call('PTTL', KEYS[1]) < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end\n"
    "redis.call('SET', KEYS[2], seq, 'PX', ARGV[3])\n"
    "return 1\n";

/// HGETALL of every key in KEYS, one reply each (a flat field/value array), in one round trip.
inline constexpr const char* kHgetallMany =
    "local out = {}\n"
    "for i = 1, #KEYS do out[i] = redis.call('HGETALL', KEYS[i]) end\n"
    "return out\n";

}  // namespace llmux::state::scripts
