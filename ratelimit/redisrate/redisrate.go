// Package redisrate is an ams.RateLimiter that keeps its counters in Redis
// (`ams serve --redis-url`), so that every process using the same Redis
// counts an account's requests together, and the database does no write
// per request.
//
// Each account has two small keys, one per window: <prefix>{<account>}:m
// and <prefix>{<account>}:d (the braces keep both in one cluster slot).
// Each holds the window's ring of ratelimit.State packed in binary: the
// newest slot (a little-endian float64, exact for any slot number) and the
// count of each slot (little-endian int32s, 61 or 25 of them). One Lua
// script, run with EVALSHA, moves both windows forward, allows the request
// only when both have room and then counts it in both, and returns both
// rings: Redis runs a script atomically, so concurrent requests of one
// account from any number of processes are admitted exactly up to the
// limit. The rules are ratelimit.State's, and the decisions those of
// ratelimit.Memory (the ratelimittest suite holds both to it). A window's
// key expires a minute after its newest slot has left the window, so idle
// accounts cost no memory.
package redisrate

import (
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/ratelimit"
	"github.com/redis/go-redis/v9"
)

// DefaultPrefix is the prefix of the keys ams serve uses.
const DefaultPrefix = "ams:rl:"

// grace is how long a window's hash outlives the window: a process whose
// clock lags by less than this still counts in the current window.
const grace = time.Minute

// takeScript is the atomic Take. KEYS: the minute and the day key. ARGV:
// now's minute and day slots, the per-minute and per-day limits, the
// rings' lengths, the slots' lengths (ms), now (Unix ms) and the grace
// (ms). It returns {allowed, the minute ring, the day ring}, the rings
// packed as they are stored. Packing with the struct library (C) keeps
// the script's work per request to a few table operations.
var takeScript = redis.NewScript(`
local now, grace = tonumber(ARGV[9]), tonumber(ARGV[10])
local function load(key, cur, n)
  local fmt = '<d' .. string.rep('i4', n)
  local v = redis.call('GET', key)
  local ring, last
  if v and #v == 8 + 4 * n then
    ring = {struct.unpack(fmt, v)}
    last = ring[1]
    table.remove(ring, 1)
    ring[n + 1] = nil -- unpack's next position
  else
    last, ring = 0, {}
    for i = 1, n do ring[i] = 0 end
  end
  local moved = false
  if cur > last then
    local left = math.min(cur - last, n)
    local i = (last + 1) % n
    for _ = 1, left do
      ring[i + 1] = 0
      i = (i + 1) % n
    end
    last, moved = cur, true
  end
  local sum = 0
  for i = 1, n do sum = sum + ring[i] end
  return {key = key, n = n, fmt = fmt, last = last, ring = ring, sum = sum, moved = moved}
end
local m = load(KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[5]))
local d = load(KEYS[2], tonumber(ARGV[2]), tonumber(ARGV[6]))
local allowed = 0
if m.sum < tonumber(ARGV[3]) and d.sum < tonumber(ARGV[4]) then allowed = 1 end
local function save(w, slotms)
  if allowed == 1 then
    local i = w.last % w.n + 1
    w.ring[i] = w.ring[i] + 1
  end
  local packed = struct.pack(w.fmt, w.last, unpack(w.ring))
  if w.moved or allowed == 1 then
    redis.call('SET', w.key, packed, 'PX', math.max((w.last + w.n) * slotms - now, 0) + grace)
  end
  return packed
end
local mp = save(m, tonumber(ARGV[7]))
local dp = save(d, tonumber(ARGV[8]))
return {allowed, mp, dp}
`)

// Limiter is the Redis rate limiter. It is safe for concurrent use.
type Limiter struct {
	client redis.Cmdable
	prefix string
	close  func() error
}

var _ ams.RateLimiter = (*Limiter)(nil)

// New returns a limiter on client whose keys start with prefix (processes
// that count together use the same prefix; DefaultPrefix is ams serve's).
// Close does not close client.
func New(client redis.Cmdable, prefix string) *Limiter {
	return &Limiter{client: client, prefix: prefix}
}

// Open connects to the Redis at url (redis://[user:password@]host:port/db,
// or rediss:// for TLS; options such as pool_size and dial_timeout are
// read from its query), checks that it answers, and returns a limiter with
// DefaultPrefix that closes the connection on Close.
func Open(ctx context.Context, url string) (*Limiter, error) {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("redis: %w", err)
	}
	c := redis.NewClient(opt)
	if err := c.Ping(ctx).Err(); err != nil {
		c.Close()
		return nil, fmt.Errorf("redis: connect to %s: %w", opt.Addr, err)
	}
	// Load the script now, so that the first requests use EVALSHA.
	if err := takeScript.Load(ctx, c).Err(); err != nil {
		c.Close()
		return nil, fmt.Errorf("redis: load script: %w", err)
	}
	l := New(c, DefaultPrefix)
	l.close = c.Close
	return l, nil
}

// SetLogger sends what the Redis client logs (failed dials, for instance)
// to l as warnings, rather than as plain lines on standard error. The
// client's logger is process-wide.
func SetLogger(l *slog.Logger) {
	redis.SetLogger(slogger{l})
}

type slogger struct{ l *slog.Logger }

func (s slogger) Printf(ctx context.Context, format string, v ...any) {
	s.l.WarnContext(ctx, strings.TrimPrefix(fmt.Sprintf(format, v...), "redis: "), "component", "redis")
}

// Close closes the connection Open made.
func (l *Limiter) Close() error {
	if l.close == nil {
		return nil
	}
	return l.close()
}

// Keys returns the keys of account's minute and day rings.
func (l *Limiter) Keys(account string) (minute, day string) {
	base := l.prefix + "{" + account + "}:"
	return base + "m", base + "d"
}

// Take counts one request of account at now, unless the minute or the day
// window is already full, and reports both windows after the request. The
// error is ctx's if ctx is done before the request is counted, or Redis's.
func (l *Limiter) Take(ctx context.Context, account string, lim ams.Limits, now time.Time) (ams.RateDecision, error) {
	if err := ctx.Err(); err != nil {
		return ams.RateDecision{}, err
	}
	minute, day := ratelimit.Slots(now)
	mk, dk := l.Keys(account)
	var s ratelimit.State
	// Run sends EVALSHA, and EVAL if Redis lost the script (a restart).
	v, err := takeScript.Run(ctx, l.client, []string{mk, dk},
		minute, day, lim.PerMinute, lim.PerDay, len(s.Minute), len(s.Day),
		ratelimit.MinuteSlotLength.Milliseconds(), ratelimit.DaySlotLength.Milliseconds(),
		now.UnixMilli(), grace.Milliseconds()).Slice()
	if err != nil {
		return ams.RateDecision{}, fmt.Errorf("rate limit: redis: %w", err)
	}
	allowed, ok := v[0].(int64)
	if len(v) != 3 || !ok {
		return ams.RateDecision{}, fmt.Errorf("rate limit: redis: script returned %v", v)
	}
	m, _ := v[1].(string)
	d, _ := v[2].(string)
	if s.MinuteLast, err = unpack(m, s.Minute[:]); err == nil {
		s.DayLast, err = unpack(d, s.Day[:])
	}
	if err != nil {
		return ams.RateDecision{}, fmt.Errorf("rate limit: redis: %w", err)
	}
	return s.Decision(allowed == 1, lim, now), nil
}

// State reads account's rings as they are stored, for tests and
// inspection. An account with nothing stored has a zero State.
func (l *Limiter) State(ctx context.Context, account string) (ratelimit.State, error) {
	var s ratelimit.State
	mk, dk := l.Keys(account)
	v, err := l.client.MGet(ctx, mk, dk).Result()
	if err != nil {
		return s, fmt.Errorf("rate limit: redis: %w", err)
	}
	if m, ok := v[0].(string); ok {
		if s.MinuteLast, err = unpack(m, s.Minute[:]); err != nil {
			return s, err
		}
	}
	if d, ok := v[1].(string); ok {
		if s.DayLast, err = unpack(d, s.Day[:]); err != nil {
			return s, err
		}
	}
	return s, nil
}

// unpack decodes a ring packed by the script into ring, and returns its
// newest slot.
func unpack(b string, ring []int32) (int64, error) {
	if len(b) != 8+4*len(ring) {
		return 0, fmt.Errorf("a ring of %d bytes, want %d", len(b), 8+4*len(ring))
	}
	last := math.Float64frombits(binary.LittleEndian.Uint64([]byte(b[:8])))
	for i := range ring {
		ring[i] = int32(binary.LittleEndian.Uint32([]byte(b[8+4*i:])))
	}
	return int64(last), nil
}
