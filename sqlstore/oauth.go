package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/amsdev/ams"
)

const clientCols = `id, user_id, name, redirect_uris, public, secret_hash, created_at, updated_at`

func scanClient(s scanner) (*ams.OAuthClient, error) {
	c := &ams.OAuthClient{Object: "oauth_client"}
	var uris []byte
	var cr, up int64
	var owner *string // NULL: a client registered by RFC 7591, of no account
	if err := s.Scan(&c.ID, &owner, &c.Name, &uris, &c.Public, &c.SecretHash, &cr, &up); err != nil {
		return nil, err
	}
	c.UserID = deref(owner)
	c.CreatedAt, c.UpdatedAt = FromMS(cr), FromMS(up)
	if err := json.Unmarshal(uris, &c.RedirectURIs); err != nil {
		return nil, fmt.Errorf("decode redirect uris of %s: %w", c.ID, err)
	}
	return c, nil
}

// CreateOAuthClient stores c (with its secret hash).
func (q *Queries) CreateOAuthClient(ctx context.Context, c *ams.OAuthClient) error {
	uris, err := json.Marshal(c.RedirectURIs)
	if err != nil {
		return err
	}
	_, err = q.exec(ctx, "insert oauth client", `INSERT INTO oauth_clients (`+clientCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
		c.ID, nullText(c.UserID), c.Name, string(uris), c.Public, c.SecretHash, MS(c.CreatedAt), MS(c.UpdatedAt))
	return err
}

// FindOAuthClient returns the client; ENOTFOUND if there is none. In a
// transaction it locks the row.
func (q *Queries) FindOAuthClient(ctx context.Context, id string) (*ams.OAuthClient, error) {
	return findOne(ctx, q, scanClient, "oauth_client", id, `SELECT `+clientCols+` FROM oauth_clients WHERE id = $1`+q.lock("FOR UPDATE"), id)
}

// ListOAuthClientPage returns a page of the clients a user registered.
func (q *Queries) ListOAuthClientPage(ctx context.Context, userID string, p ams.ListParams) (*ams.Page[*ams.OAuthClient], error) {
	return list(ctx, q, clientCols, "oauth_clients", where("user_id = $1", userID), p, scanClient)
}

// ListOAuthClients returns the clients a user registered, newest first.
func (q *Queries) ListOAuthClients(ctx context.Context, userID string) ([]*ams.OAuthClient, error) {
	return collect(ctx, q.r, "oauth clients", scanClient, `SELECT `+clientCols+` FROM oauth_clients WHERE user_id = $1 ORDER BY seq DESC`, userID)
}

// PublicRedirectURIs returns the redirect URIs of every public client,
// by client id.
func (q *Queries) PublicRedirectURIs(ctx context.Context) (map[string][]string, error) {
	type client struct {
		id   string
		uris []string
	}
	list, err := collect(ctx, q.r, "public redirect uris", func(s scanner) (client, error) {
		var c client
		var raw []byte
		if err := s.Scan(&c.id, &raw); err != nil {
			return c, err
		}
		return c, json.Unmarshal(raw, &c.uris)
	}, `SELECT id, redirect_uris FROM oauth_clients WHERE public`)
	if err != nil {
		return nil, err
	}
	out := make(map[string][]string, len(list))
	for _, c := range list {
		out[c.id] = c.uris
	}
	return out, nil
}

// SetOAuthClientSecret replaces the secret hash of the user's confidential
// client; ENOTFOUND if it is not the user's, ECONFLICT if it is public.
func (q *Queries) SetOAuthClientSecret(ctx context.Context, userID, id, hash string, now time.Time) (*ams.OAuthClient, error) {
	c, err := scanClient(q.w.QueryRow(ctx, `UPDATE oauth_clients SET secret_hash = $1, updated_at = $2
		WHERE id = $3 AND user_id = $4 AND NOT public RETURNING `+clientCols, hash, MS(now), id, userID))
	if errors.Is(err, sql.ErrNoRows) {
		c, err := q.FindOAuthClient(ctx, id)
		if err != nil {
			return nil, err
		}
		if c.UserID != userID {
			return nil, ams.NotFound("oauth_client", id)
		}
		return nil, ams.Errorf(ams.ECONFLICT, "public_client", "The client '%s' is public: it has no secret.", id)
	}
	if err != nil {
		return nil, q.fail("set oauth client secret", err)
	}
	return c, nil
}

// DeleteOAuthClient removes the user's client; its tokens go with it (the
// foreign key cascades, through the oauth_tokens_client index), and the
// API keys its grants made (of every account) are revoked at now, with their api_key.revoked
// events, in the same transaction.
func (q *Queries) DeleteOAuthClient(ctx context.Context, userID, id string, now time.Time) error {
	return q.inTx(ctx, func(q *Queries) error {
		n, err := q.exec(ctx, "delete oauth client", `DELETE FROM oauth_clients WHERE id = $1 AND user_id = $2`, id, userID)
		if err != nil {
			return err
		}
		if n == 0 {
			return ams.NotFound("oauth_client", id)
		}
		q.authChanged()
		return q.revokeGrantKeys(ctx, now, "oauth_client_id = $1", id) // every account's grants of it
	})
}

// CreateOAuthToken stores a token's state.
func (q *Queries) CreateOAuthToken(ctx context.Context, t *ams.OAuthToken) error {
	_, err := q.exec(ctx, "insert oauth token", `INSERT INTO oauth_tokens (kind, signature, request_id, client_id, user_id, scopes, active, data, expires_at, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`, t.Kind, t.Signature, t.RequestID, t.ClientID, t.UserID, strings.Join(t.Scopes, " "),
		t.Active, t.Data, MS(t.ExpiresAt), MS(t.CreatedAt))
	return err
}

// GetOAuthToken returns a token's state, active or not; ENOTFOUND if none.
// It reads through the read pool: in SQLite's WAL mode a read that starts
// after a commit sees it, and API requests with access tokens must not
// queue behind writes.
func (q *Queries) GetOAuthToken(ctx context.Context, kind, signature string) (*ams.OAuthToken, error) {
	t := &ams.OAuthToken{Kind: kind, Signature: signature}
	var scopes string
	var exp, cr int64
	err := q.r.QueryRow(ctx, `SELECT request_id, client_id, user_id, scopes, active, data, expires_at, created_at
		FROM oauth_tokens WHERE kind = $1 AND signature = $2`, kind, signature).Scan(&t.RequestID, &t.ClientID, &t.UserID, &scopes, &t.Active, &t.Data, &exp, &cr)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ams.NotFound("oauth_token", "")
	}
	if err != nil {
		return nil, q.fail("find oauth token", err)
	}
	t.Scopes = strings.Fields(scopes)
	t.ExpiresAt, t.CreatedAt = FromMS(exp), FromMS(cr)
	return t, nil
}

// DeactivateOAuthToken marks one token inactive.
func (q *Queries) DeactivateOAuthToken(ctx context.Context, kind, signature string) error {
	_, err := q.exec(ctx, "deactivate oauth token", `UPDATE oauth_tokens SET active = FALSE WHERE kind = $1 AND signature = $2`, kind, signature)
	q.accessChanged(kind, err)
	return err
}

// DeleteOAuthToken removes one token.
func (q *Queries) DeleteOAuthToken(ctx context.Context, kind, signature string) error {
	_, err := q.exec(ctx, "delete oauth token", `DELETE FROM oauth_tokens WHERE kind = $1 AND signature = $2`, kind, signature)
	q.accessChanged(kind, err)
	return err
}

// RevokeGrant marks every token of the kind in the grant (request id)
// inactive and revokes at now the API keys the grant made, with their
// api_key.revoked events, in one transaction: what a revocation of the
// grant does (RFC 7009, refresh-token reuse), where DeactivateGrant is a
// refresh's retirement of the tokens it replaces.
func (q *Queries) RevokeGrant(ctx context.Context, kind, requestID string, now time.Time) error {
	return q.inTx(ctx, func(q *Queries) error {
		if err := q.DeactivateGrant(ctx, kind, requestID); err != nil {
			return err
		}
		return q.revokeGrantKeys(ctx, now, "oauth_grant_id = $1", requestID)
	})
}

// DeactivateGrant marks every token of the kind in the grant inactive.
func (q *Queries) DeactivateGrant(ctx context.Context, kind, requestID string) error {
	_, err := q.exec(ctx, "deactivate grant", `UPDATE oauth_tokens SET active = FALSE WHERE kind = $1 AND request_id = $2`, kind, requestID)
	q.accessChanged(kind, err)
	return err
}

// AcquireOAuthLock takes the credential lock name for owner until until,
// unless another owner's lease is live at now. The upsert takes the row
// lock, so of two processes racing for one name exactly one gets it.
func (q *Queries) AcquireOAuthLock(ctx context.Context, name, owner string, now, until time.Time) (bool, error) {
	n, err := q.exec(ctx, "acquire oauth lock", `INSERT INTO oauth_locks (name, owner, expires_at) VALUES ($1, $2, $3)
		ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at
		WHERE oauth_locks.expires_at <= $4 OR oauth_locks.owner = excluded.owner`, name, owner, MS(until), MS(now))
	return n == 1, err
}

// ReleaseOAuthLock gives up owner's hold of the credential lock name.
func (q *Queries) ReleaseOAuthLock(ctx context.Context, name, owner string) error {
	_, err := q.exec(ctx, "release oauth lock", `DELETE FROM oauth_locks WHERE name = $1 AND owner = $2`, name, owner)
	return err
}

// CreateLoginSession stores a browser session.
func (q *Queries) CreateLoginSession(ctx context.Context, s *ams.LoginSession) error {
	_, err := q.exec(ctx, "insert login session", `INSERT INTO login_sessions (id_hash, user_id, created_at, expires_at) VALUES ($1, $2, $3, $4)`,
		s.IDHash, s.UserID, MS(s.CreatedAt), MS(s.ExpiresAt))
	return err
}

// FindLoginSession returns an unexpired session; ENOTFOUND otherwise.
func (q *Queries) FindLoginSession(ctx context.Context, idHash string, now time.Time) (*ams.LoginSession, error) {
	s := &ams.LoginSession{IDHash: idHash}
	var cr, exp int64
	err := q.r.QueryRow(ctx, `SELECT user_id, created_at, expires_at FROM login_sessions WHERE id_hash = $1 AND expires_at > $2`,
		idHash, MS(now)).Scan(&s.UserID, &cr, &exp)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ams.NotFound("session", "")
	}
	if err != nil {
		return nil, q.fail("find login session", err)
	}
	s.CreatedAt, s.ExpiresAt = FromMS(cr), FromMS(exp)
	return s, nil
}

// DeleteLoginSession ends a session.
func (q *Queries) DeleteLoginSession(ctx context.Context, idHash string) error {
	_, err := q.exec(ctx, "delete login session", `DELETE FROM login_sessions WHERE id_hash = $1`, idHash)
	return err
}

// DeleteOtherLoginSessions ends the user's login sessions but keep.
func (q *Queries) DeleteOtherLoginSessions(ctx context.Context, userID, keep string) error {
	_, err := q.exec(ctx, "delete login sessions", `DELETE FROM login_sessions WHERE user_id = $1 AND id_hash != $2`, userID, keep)
	return err
}

// ListGrants returns the clients the user holds live access or refresh
// tokens of.
func (q *Queries) ListGrants(ctx context.Context, userID string, now time.Time) ([]*ams.OAuthGrant, error) {
	return collect(ctx, q.r, "oauth grants", func(s scanner) (*ams.OAuthGrant, error) {
		g := &ams.OAuthGrant{}
		var first, last int64
		var scopes string
		if err := s.Scan(&g.ClientID, &g.ClientName, &first, &last, &scopes); err != nil {
			return nil, err
		}
		g.FirstGrantedAt, g.LastGrantedAt = FromMS(first), FromMS(last)
		g.Scopes = grantScopes(scopes)
		return g, nil
	}, `SELECT t.client_id, c.name, MIN(t.created_at), MAX(t.created_at),
			COALESCE(string_agg(CASE WHEN t.active AND t.expires_at > $1 THEN t.scopes END, ' '), '')
		FROM oauth_tokens t JOIN oauth_clients c ON c.id = t.client_id
		WHERE t.user_id = $2 AND t.kind IN ('access', 'refresh')
		GROUP BY t.client_id, c.name
		HAVING MAX(CASE WHEN t.active AND t.expires_at > $1 THEN 1 ELSE 0 END) = 1
		ORDER BY MAX(t.created_at) DESC, t.client_id`, MS(now), userID)
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
// the client and revokes at now the API keys its grants made (with their
// api_key.revoked events), in one transaction; ENOTFOUND if there were
// no live tokens.
func (q *Queries) RevokeGrants(ctx context.Context, userID, clientID string, now time.Time) error {
	return q.inTx(ctx, func(q *Queries) error {
		n, err := q.exec(ctx, "revoke oauth grants", `UPDATE oauth_tokens SET active = FALSE
			WHERE user_id = $1 AND client_id = $2 AND kind IN ('code', 'access', 'refresh') AND active`, userID, clientID)
		if err != nil {
			return err
		}
		if n > 0 {
			q.authChanged()
		}
		if err := q.revokeGrantKeys(ctx, now, "user_id = $1 AND oauth_client_id = $2", userID, clientID); err != nil {
			return err
		}
		return affected(n, "oauth_grant", clientID)
	})
}

// CountOAuthClients counts the user's clients, after locking the user's
// row (lockUser) in a transaction.
func (q *Queries) CountOAuthClients(ctx context.Context, userID string) (int, error) {
	if err := q.lockUser(ctx, userID); err != nil {
		return 0, err
	}
	var n int
	if err := q.r.QueryRow(ctx, `SELECT count(*) FROM oauth_clients WHERE user_id = $1`, userID).Scan(&n); err != nil {
		return 0, q.fail("count oauth clients", err)
	}
	return n, nil
}
