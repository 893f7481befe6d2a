package sqlstore

import (
	"context"

	"github.com/amsdev/ams"
)

// AuthGenerationQuery reads the authentication generation, which the
// triggers of migration 0019 bump in every transaction that changes a
// key, an access token, a client or an account in a way that matters to
// authentication. The engines run it on connections of their own too.
const AuthGenerationQuery = `SELECT generation FROM auth_state WHERE id = 1`

// AuthGeneration reads the stored authentication generation (see
// ams.AuthWatch). The engines answer ams.AuthWatch without this query
// when nothing has changed; this is their fallback and their truth.
func (q *Queries) AuthGeneration(ctx context.Context) (int64, error) {
	var g int64
	if err := q.r.QueryRow(ctx, AuthGenerationQuery).Scan(&g); err != nil {
		return 0, q.fail("read auth generation", err)
	}
	return g, nil
}

// OnAuthChanged sets f, called after this process commits a change that
// moves the authentication generation (a key revoked, an account updated,
// a token or grant revoked, a client deleted), before the call that made
// it returns. The triggers move the stored generation whoever writes; f
// lets an engine that learns of the moves asynchronously (PostgreSQL's
// notifications) see its own process's at once, and wait until the other
// processes have heard of it. f may block briefly (milliseconds; a bounded
// wait for a process that does not answer), as such changes are rare. Set it before the store is used.
func (s *Store) OnAuthChanged(f func()) { s.auth = f }

// authChanged reports a change of authentication: after the commit of the
// transaction q is in, or at once outside one.
func (q *Queries) authChanged() {
	if q.tx != nil {
		q.tx.auth = true
	} else {
		q.s.signalAuth()
	}
}

func (s *Store) signalAuth() {
	if s.auth != nil {
		s.auth()
	}
}

// accessChanged reports a change of authentication when a write of
// access tokens (kind) succeeded.
func (q *Queries) accessChanged(kind string, err error) {
	if err == nil && kind == ams.TokenAccess {
		q.authChanged()
	}
}
