package web

import (
	"time"

	"github.com/amsdev/ams"
)

// keyState is "revoked", "expired" or "active".
func keyState(k *ams.APIKey, now time.Time) string {
	switch {
	case k.RevokedAt != nil:
		return "revoked"
	case k.ExpiresAt != nil && !now.Before(*k.ExpiresAt):
		return "expired"
	}
	return "active"
}
