package sqlstore

import "context"

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
