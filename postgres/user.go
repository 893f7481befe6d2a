package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/internal/sqlrow"
	"github.com/jackc/pgx/v5"
)

// CreateUser stores u. The e-mail is stored lower-cased, so it is compared
// case-insensitively; ECONFLICT if it is taken.
func (db *DB) CreateUser(ctx context.Context, u *ams.User) error {
	_, err := db.pool.Exec(ctx, `INSERT INTO users (`+sqlrow.UserCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
		u.ID, strings.ToLower(u.Email), u.PasswordHash, string(u.Plan), u.RPM, u.RPD, u.Timezone, ms(u.CreatedAt), ms(u.UpdatedAt),
		sqlrow.NullMS(u.ApprovedAt), u.Admin)
	if code, constraint := pgCode(err); code == codeUniqueViolation && constraint == "users_email_key" {
		return ams.Errorf(ams.ECONFLICT, "email_taken", "A user with e-mail %s already exists.", u.Email)
	}
	if err != nil {
		return fail("insert user", err)
	}
	return nil
}

// FindUser returns the user with id; ENOTFOUND if there is none.
func (db *DB) FindUser(ctx context.Context, id string) (*ams.User, error) {
	return findUser(ctx, db.pool, "id = $1", id)
}

// FindUserByEmail returns the user with the e-mail; ENOTFOUND if none.
func (db *DB) FindUserByEmail(ctx context.Context, email string) (*ams.User, error) {
	return findUser(ctx, db.pool, "email = $1", strings.ToLower(email))
}

func findUser(ctx context.Context, q querier, cond string, arg string) (*ams.User, error) {
	u, err := sqlrow.User(q.QueryRow(ctx, `SELECT `+sqlrow.UserCols+` FROM users WHERE `+cond, arg))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ams.NotFound("user", arg)
	}
	if err != nil {
		return nil, fmt.Errorf("find user: %w", err)
	}
	return u, nil
}

// UpdateUser changes the fields set in upd and returns the user;
// ENOTFOUND if there is none. It is one UPDATE … RETURNING: the row is
// locked while the fields not set keep their stored values, so concurrent
// updates of different fields from several processes are not lost.
func (db *DB) UpdateUser(ctx context.Context, id string, upd ams.UserUpdate, now time.Time) (*ams.User, error) {
	var plan *string
	if upd.Plan != nil {
		p := string(*upd.Plan)
		plan = &p
	}
	var approved *int64 // approved once: the first time stays
	if upd.ApprovedAt != nil {
		a := ms(*upd.ApprovedAt)
		approved = &a
	}
	u, err := sqlrow.User(db.pool.QueryRow(ctx, `UPDATE users SET plan = coalesce($2, plan), rpm = coalesce($3, rpm),
		rpd = coalesce($4, rpd), timezone = coalesce($5, timezone), password_hash = coalesce($6, password_hash), updated_at = $7,
		approved_at = coalesce(approved_at, $8), admin = coalesce($9, admin)
		WHERE id = $1 RETURNING `+sqlrow.UserCols, id, plan, upd.RPM, upd.RPD, upd.Timezone, upd.PasswordHash, ms(now), approved, upd.Admin))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, ams.NotFound("user", id)
	}
	if err != nil {
		return nil, fail("update user", err)
	}
	return u, nil
}

// ListWaitlist returns up to limit accounts that are not approved, oldest
// first, and whether there are more.
func (db *DB) ListWaitlist(ctx context.Context, limit int) ([]*ams.User, bool, error) {
	rows, err := db.pool.Query(ctx, `SELECT `+sqlrow.UserCols+` FROM users WHERE approved_at IS NULL ORDER BY seq LIMIT $1`, limit+1)
	if err != nil {
		return nil, false, fail("list waitlist", err)
	}
	defer rows.Close()
	var us []*ams.User
	for rows.Next() {
		u, err := sqlrow.User(rows)
		if err != nil {
			return nil, false, fail("list waitlist", err)
		}
		us = append(us, u)
	}
	if err := rows.Err(); err != nil {
		return nil, false, fail("list waitlist", err)
	}
	if len(us) > limit {
		return us[:limit], true, nil
	}
	return us, false, nil
}
