package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/sqlrow"
	"github.com/jackc/pgx/v5"
)

func scanClient(s scanner) (*ams.OAuthClient, error) {
	c := &ams.OAuthClient{Object: "oauth_client"}
	var uris []byte
	var cr, up int64
	if err := s.Scan(&c.ID, &c.UserID, &c.Name, &uris, &c.Public, &c.SecretHash, &cr, &up); err != nil {
		return nil, err
	}
	c.CreatedAt, c.UpdatedAt = fromMS(cr), fromMS(up)
	if err := json.Unmarshal(uris, &c.RedirectURIs); err != nil {
		return nil, fmt.Errorf("decode redirect uris of %s: %w", c.ID, err)
	}
	return c, nil
}

// CreateOAuthClient stores c (with its secret hash).
func (db *DB) CreateOAuthClient(ctx context.Context, c *ams.OAuthClient) error {
	uris, err := json.Marshal(c.RedirectURIs)
	if err != nil {
		return err
	}
	if _, err := db.pool.Exec(ctx, `INSERT INTO oauth_clients (`+sqlrow.ClientCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
		c.ID, c.UserID, c.Name, uris, c.Public, c.SecretHash, ms(c.CreatedAt), ms(c.UpdatedAt)); err != nil {
		return fail("insert oauth client", err)
	}
	return nil
}

// FindOAuthClient returns the client; ENOTFOUND if there is none.
func (db *DB) FindOAuthClient(ctx context.Context, id string) (*ams.OAuthClient, error) {
	c, err := scanClient(db.pool.QueryRow(ctx, `SELECT `+sqlrow.ClientCols+` FROM oauth_clients WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ams.NotFound("oauth_client", id)
	}
	if err != nil {
		return nil, fmt.Errorf("find oauth client: %w", err)
	}
	return c, nil
}

// ListOAuthClients returns the clients a user registered, newest first.
func (db *DB) ListOAuthClients(ctx context.Context, userID string) ([]*ams.OAuthClient, error) {
	rows, err := db.pool.Query(ctx, `SELECT `+sqlrow.ClientCols+` FROM oauth_clients WHERE user_id = $1 ORDER BY seq DESC`, userID)
	if err != nil {
		return nil, fmt.Errorf("list oauth clients: %w", err)
	}
	defer rows.Close()
	var out []*ams.OAuthClient
	for rows.Next() {
		c, err := scanClient(rows)
		if err != nil {
			return nil, fmt.Errorf("scan oauth client: %w", err)
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// CreateOAuthToken stores a token's state.
func (db *DB) CreateOAuthToken(ctx context.Context, t *ams.OAuthToken) error {
	if _, err := db.pool.Exec(ctx, `INSERT INTO oauth_tokens (kind, signature, request_id, client_id, user_id, scopes, active, data, expires_at, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`, t.Kind, t.Signature, t.RequestID, t.ClientID, t.UserID, strings.Join(t.Scopes, " "),
		t.Active, t.Data, ms(t.ExpiresAt), ms(t.CreatedAt)); err != nil {
		return fail("insert oauth token", err)
	}
	return nil
}

// GetOAuthToken returns a token's state, active or not; ENOTFOUND if none.
func (db *DB) GetOAuthToken(ctx context.Context, kind, signature string) (*ams.OAuthToken, error) {
	t := &ams.OAuthToken{Kind: kind, Signature: signature}
	var scopes string
	var exp, cr int64
	err := db.pool.QueryRow(ctx, `SELECT request_id, client_id, user_id, scopes, active, data, expires_at, created_at
		FROM oauth_tokens WHERE kind = $1 AND signature = $2`, kind, signature).Scan(&t.RequestID, &t.ClientID, &t.UserID, &scopes, &t.Active, &t.Data, &exp, &cr)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ams.NotFound("oauth_token", "")
	}
	if err != nil {
		return nil, fmt.Errorf("find oauth token: %w", err)
	}
	t.Scopes = strings.Fields(scopes)
	t.ExpiresAt, t.CreatedAt = fromMS(exp), fromMS(cr)
	return t, nil
}

// DeactivateOAuthToken marks one token inactive.
func (db *DB) DeactivateOAuthToken(ctx context.Context, kind, signature string) error {
	if _, err := db.pool.Exec(ctx, `UPDATE oauth_tokens SET active = false WHERE kind = $1 AND signature = $2`, kind, signature); err != nil {
		return fmt.Errorf("deactivate oauth token: %w", err)
	}
	return nil
}

// DeleteOAuthToken removes one token.
func (db *DB) DeleteOAuthToken(ctx context.Context, kind, signature string) error {
	if _, err := db.pool.Exec(ctx, `DELETE FROM oauth_tokens WHERE kind = $1 AND signature = $2`, kind, signature); err != nil {
		return fmt.Errorf("delete oauth token: %w", err)
	}
	return nil
}

// DeactivateGrant marks every token of the kind in the grant inactive.
func (db *DB) DeactivateGrant(ctx context.Context, kind, requestID string) error {
	if _, err := db.pool.Exec(ctx, `UPDATE oauth_tokens SET active = false WHERE kind = $1 AND request_id = $2`, kind, requestID); err != nil {
		return fmt.Errorf("deactivate grant: %w", err)
	}
	return nil
}

// AcquireOAuthLock takes the credential lock name for owner until until,
// unless another owner's lease is live at now. The upsert takes the row
// lock, so of two processes racing for one name exactly one gets it.
func (db *DB) AcquireOAuthLock(ctx context.Context, name, owner string, now, until time.Time) (bool, error) {
	tag, err := db.pool.Exec(ctx, `INSERT INTO oauth_locks (name, owner, expires_at) VALUES ($1, $2, $3)
		ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at
		WHERE oauth_locks.expires_at <= $4 OR oauth_locks.owner = excluded.owner`, name, owner, ms(until), ms(now))
	if err != nil {
		return false, fmt.Errorf("acquire oauth lock: %w", err)
	}
	return tag.RowsAffected() == 1, nil
}

// ReleaseOAuthLock gives up owner's hold of the credential lock name.
func (db *DB) ReleaseOAuthLock(ctx context.Context, name, owner string) error {
	if _, err := db.pool.Exec(ctx, `DELETE FROM oauth_locks WHERE name = $1 AND owner = $2`, name, owner); err != nil {
		return fmt.Errorf("release oauth lock: %w", err)
	}
	return nil
}

// CreateLoginSession stores a browser session.
func (db *DB) CreateLoginSession(ctx context.Context, s *ams.LoginSession) error {
	if _, err := db.pool.Exec(ctx, `INSERT INTO login_sessions (id_hash, user_id, created_at, expires_at) VALUES ($1, $2, $3, $4)`,
		s.IDHash, s.UserID, ms(s.CreatedAt), ms(s.ExpiresAt)); err != nil {
		return fmt.Errorf("insert login session: %w", err)
	}
	return nil
}

// FindLoginSession returns an unexpired session; ENOTFOUND otherwise.
func (db *DB) FindLoginSession(ctx context.Context, idHash string, now time.Time) (*ams.LoginSession, error) {
	s := &ams.LoginSession{IDHash: idHash}
	var cr, exp int64
	err := db.pool.QueryRow(ctx, `SELECT user_id, created_at, expires_at FROM login_sessions WHERE id_hash = $1 AND expires_at > $2`,
		idHash, ms(now)).Scan(&s.UserID, &cr, &exp)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ams.NotFound("session", "")
	}
	if err != nil {
		return nil, fmt.Errorf("find login session: %w", err)
	}
	s.CreatedAt, s.ExpiresAt = fromMS(cr), fromMS(exp)
	return s, nil
}

// DeleteLoginSession ends a session.
func (db *DB) DeleteLoginSession(ctx context.Context, idHash string) error {
	if _, err := db.pool.Exec(ctx, `DELETE FROM login_sessions WHERE id_hash = $1`, idHash); err != nil {
		return fmt.Errorf("delete login session: %w", err)
	}
	return nil
}

// DeleteOtherLoginSessions ends the user's login sessions but keep.
func (db *DB) DeleteOtherLoginSessions(ctx context.Context, userID, keep string) error {
	if _, err := db.pool.Exec(ctx, `DELETE FROM login_sessions WHERE user_id = $1 AND id_hash != $2`, userID, keep); err != nil {
		return fmt.Errorf("delete login sessions: %w", err)
	}
	return nil
}

// SetOAuthClientSecret replaces the secret hash of the user's confidential
// client.
func (db *DB) SetOAuthClientSecret(ctx context.Context, userID, id, hash string, now time.Time) (*ams.OAuthClient, error) {
	c, err := scanClient(db.pool.QueryRow(ctx, `UPDATE oauth_clients SET secret_hash = $1, updated_at = $2
		WHERE id = $3 AND user_id = $4 AND NOT public RETURNING `+sqlrow.ClientCols, hash, ms(now), id, userID))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, clientNotUpdatable(ctx, db, userID, id)
	}
	if err != nil {
		return nil, fmt.Errorf("set oauth client secret: %w", err)
	}
	return c, nil
}

// clientNotUpdatable says why a secret update matched no row: the client
// is not the user's (ENOTFOUND) or it is public (ECONFLICT).
func clientNotUpdatable(ctx context.Context, db *DB, userID, id string) error {
	c, err := db.FindOAuthClient(ctx, id)
	if err != nil {
		return err
	}
	if c.UserID != userID {
		return ams.NotFound("oauth_client", id)
	}
	return ams.Errorf(ams.ECONFLICT, "public_client", "The client '%s' is public: it has no secret.", id)
}

// DeleteOAuthClient removes the user's client; its tokens go with it (the
// foreign key cascades, through the oauth_tokens_client index).
func (db *DB) DeleteOAuthClient(ctx context.Context, userID, id string) error {
	tag, err := db.pool.Exec(ctx, `DELETE FROM oauth_clients WHERE id = $1 AND user_id = $2`, id, userID)
	if err != nil {
		return fmt.Errorf("delete oauth client: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return ams.NotFound("oauth_client", id)
	}
	return nil
}

// ListGrants returns the clients the user holds live access or refresh
// tokens of.
func (db *DB) ListGrants(ctx context.Context, userID string, now time.Time) ([]*ams.OAuthGrant, error) {
	rows, err := db.pool.Query(ctx, `SELECT t.client_id, c.name, MIN(t.created_at), MAX(t.created_at),
			COALESCE(string_agg(CASE WHEN t.active AND t.expires_at > $1 THEN t.scopes END, ' '), '')
		FROM oauth_tokens t JOIN oauth_clients c ON c.id = t.client_id
		WHERE t.user_id = $2 AND t.kind IN ('access', 'refresh')
		GROUP BY t.client_id, c.name
		HAVING bool_or(t.active AND t.expires_at > $1)
		ORDER BY MAX(t.created_at) DESC, t.client_id`, ms(now), userID)
	if err != nil {
		return nil, fmt.Errorf("list oauth grants: %w", err)
	}
	defer rows.Close()
	var out []*ams.OAuthGrant
	for rows.Next() {
		g := &ams.OAuthGrant{}
		var first, last int64
		var scopes string
		if err := rows.Scan(&g.ClientID, &g.ClientName, &first, &last, &scopes); err != nil {
			return nil, fmt.Errorf("scan oauth grant: %w", err)
		}
		g.FirstGrantedAt, g.LastGrantedAt = fromMS(first), fromMS(last)
		g.Scopes = grantScopes(scopes)
		out = append(out, g)
	}
	return out, rows.Err()
}

// grantScopes returns the permissions named in the space-separated list,
// each once, in canonical order.
func grantScopes(list string) []string {
	words := strings.Fields(list)
	out := []string{}
	for _, p := range ams.AllPermissions {
		if slices.Contains(words, string(p)) {
			out = append(out, string(p))
		}
	}
	return out
}

// RevokeGrants deactivates the user's codes, access and refresh tokens of
// the client.
func (db *DB) RevokeGrants(ctx context.Context, userID, clientID string) error {
	tag, err := db.pool.Exec(ctx, `UPDATE oauth_tokens SET active = false
		WHERE user_id = $1 AND client_id = $2 AND kind IN ('code', 'access', 'refresh') AND active`, userID, clientID)
	if err != nil {
		return fmt.Errorf("revoke oauth grants: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return ams.NotFound("oauth_grant", clientID)
	}
	return nil
}
