package http

import (
	"log/slog"
	"time"
)

func slogString(k, v string) slog.Attr  { return slog.String(k, v) }
func slogInt(k string, v int) slog.Attr { return slog.Int(k, v) }
func slogDuration(k string, v time.Duration) slog.Attr {
	return slog.Float64(k+"_ms", float64(v.Microseconds())/1000)
}

// levelFor logs server errors at error level, everything else at info.
func levelFor(status int) slog.Level {
	if status >= 500 {
		return slog.LevelError
	}
	return slog.LevelInfo
}
