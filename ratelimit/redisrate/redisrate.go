// Package redisrate is an ams.RateLimiter that keeps its counters in Redis
// (`ams serve --redis-url`), so that every process using the same Redis
// counts an account's requests together, and the database does no write
// per request.
//
// Each account has two small hashes, one per window, holding the window's
// start (Unix seconds) and count: <prefix>{<account>}:m and
// <prefix>{<account>}:d (the braces keep both in one cluster slot). One
// Lua script, run with EVALSHA, reads both, restarts a window that now has
// left, allows the request only when both have room and then counts it in
// both: Redis runs a script atomically, so concurrent requests of one
// account from any number of processes are admitted exactly up to the
// limit. The rules are ratelimit.State's, and the decisions those of
// ratelimit.Memory (the ratelimittest suite holds both to it). A window's
// hash expires a minute after the window ends, so idle accounts cost no
// memory.
package redisrate

import (
	"context"
	"fmt"
	"log/slog"
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

// takeScript is the atomic Take. KEYS: the minute and the day hash. ARGV:
// the starts of now's minute and day windows (Unix seconds), the per-minute
// and per-day limits, now (Unix milliseconds) and the grace (ms). It
// returns {allowed, minute start, minute count, day start, day count}.
var takeScript = redis.NewScript(`
local ms, ds = tonumber(ARGV[1]), tonumber(ARGV[2])
local lm, ld = tonumber(ARGV[3]), tonumber(ARGV[4])
local now, grace = tonumber(ARGV[5]), tonumber(ARGV[6])
local m = redis.call('HMGET', KEYS[1], 's', 'n')
local d = redis.call('HMGET', KEYS[2], 's', 'n')
local cms, cmn = tonumber(m[1]), tonumber(m[2]) or 0
local cds, cdn = tonumber(d[1]), tonumber(d[2]) or 0
local mch, dch = false, false
-- A window older than now's restarts; a newer one is kept.
if cms == nil or cms < ms then cms, cmn, mch = ms, 0, true end
if cds == nil or cds < ds then cds, cdn, dch = ds, 0, true end
local allowed = 0
if cmn < lm and cdn < ld then
  cmn, cdn, allowed, mch, dch = cmn + 1, cdn + 1, 1, true, true
end
local function save(key, start, count, length)
  redis.call('HSET', key, 's', start, 'n', count)
  redis.call('PEXPIRE', key, math.max((start + length) * 1000 - now, 0) + grace)
end
if mch then save(KEYS[1], cms, cmn, 60) end
if dch then save(KEYS[2], cds, cdn, 86400) end
return {allowed, cms, cmn, cds, cdn}
`)

// Limiter is the Redis rate limiter. It is safe for concurrent use.
type Limiter struct {
	client redis.Scripter
	prefix string
	close  func() error
}

var _ ams.RateLimiter = (*Limiter)(nil)

// New returns a limiter on client whose keys start with prefix (processes
// that count together use the same prefix; DefaultPrefix is ams serve's).
// Close does not close client.
func New(client redis.Scripter, prefix string) *Limiter {
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

// Keys returns the keys of account's minute and day hashes.
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
	minuteStart, dayStart := ratelimit.Starts(now)
	mk, dk := l.Keys(account)
	// Run sends EVALSHA, and EVAL if Redis lost the script (a restart).
	v, err := takeScript.Run(ctx, l.client, []string{mk, dk},
		minuteStart, dayStart, lim.PerMinute, lim.PerDay, now.UnixMilli(), grace.Milliseconds()).Int64Slice()
	if err != nil {
		return ams.RateDecision{}, fmt.Errorf("rate limit: redis: %w", err)
	}
	if len(v) != 5 {
		return ams.RateDecision{}, fmt.Errorf("rate limit: redis: script returned %d values, want 5", len(v))
	}
	s := ratelimit.State{MinuteStart: v[1], Minute: int(v[2]), DayStart: v[3], Day: int(v[4])}
	return ratelimit.Decision(v[0] == 1, lim, s), nil
}
