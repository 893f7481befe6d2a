package storetest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/amsdev/ams"
)

// testWaitlist checks the waitlist columns of users: approval and the
// admin flag read back, are changed by UpdateUser (the first approval
// time stays), and ListWaitlist lists the unapproved, oldest first.
func testWaitlist(t *testing.T, s ams.Store) {
	ctx := context.Background()
	mk := func(email string, i int, approved, admin bool) *ams.User {
		now := t0.Add(time.Duration(i) * time.Minute)
		u := &ams.User{ID: ams.NewID(ams.PrefixUser), Email: email, Plan: ams.PlanStandard, Timezone: "UTC",
			CreatedAt: now, UpdatedAt: now, Admin: admin}
		if approved {
			u.ApprovedAt = &now
		}
		if err := s.CreateUser(ctx, u); err != nil {
			t.Fatal(err)
		}
		return u
	}
	w1 := mk("w1@example.com", 0, false, false)
	boss := mk("boss@example.com", 1, true, true)
	w2 := mk("w2@example.com", 2, false, false)
	w3 := mk("w3@example.com", 3, false, false)

	got, err := s.FindUser(ctx, boss.ID)
	if err != nil || !got.Approved() || !got.ApprovedAt.Equal(t0.Add(time.Minute)) || !got.Admin {
		t.Fatalf("admin read back: %+v, %v", got, err)
	}
	if got, _ := s.FindUserByEmail(ctx, "w1@example.com"); got.Approved() || got.Admin {
		t.Fatalf("waiting user read back: %+v", got)
	}

	list, more, err := s.ListWaitlist(ctx, 2)
	if err != nil || !more || len(list) != 2 || list[0].ID != w1.ID || list[1].ID != w2.ID {
		t.Fatalf("ListWaitlist(2): %v %v %v", list, more, err)
	}

	approvedAt := t0.Add(time.Hour)
	u, err := s.UpdateUser(ctx, w1.ID, ams.UserUpdate{ApprovedAt: &approvedAt}, approvedAt)
	if err != nil || !u.Approved() || !u.ApprovedAt.Equal(approvedAt) || u.Email != "w1@example.com" || u.Plan != ams.PlanStandard {
		t.Fatalf("approve: %+v, %v", u, err)
	}
	later := approvedAt.Add(time.Hour)
	yes := true
	u, err = s.UpdateUser(ctx, w1.ID, ams.UserUpdate{ApprovedAt: &later, Admin: &yes}, later)
	if err != nil || !u.ApprovedAt.Equal(approvedAt) || !u.Admin {
		t.Fatalf("second approval and admin: %+v, %v", u, err)
	}
	if u, _ := s.FindUser(ctx, w1.ID); !u.ApprovedAt.Equal(approvedAt) || !u.Admin {
		t.Fatalf("read back: %+v", u)
	}
	no := false
	tz := "Europe/Berlin"
	if u, err = s.UpdateUser(ctx, w1.ID, ams.UserUpdate{Admin: &no, Timezone: &tz}, later); err != nil || u.Admin || !u.Approved() || u.Timezone != tz {
		t.Fatalf("admin off, time zone: %+v, %v", u, err)
	}

	list, more, err = s.ListWaitlist(ctx, 10)
	if err != nil || more || len(list) != 2 || list[0].ID != w2.ID || list[1].ID != w3.ID {
		t.Fatalf("ListWaitlist(10) after approval: %v %v %v", list, more, err)
	}
}

// testListUsers: ListUsers pages through every account in order of
// creation, approved or not.
func testListUsers(t *testing.T, s ams.Store) {
	ctx := context.Background()
	var ids []string
	for _, e := range []string{"lu1@example.com", "lu2@example.com", "lu3@example.com"} {
		ids = append(ids, mustUser(t, s, e).ID)
	}
	var got []string
	after := ""
	for pages := 0; ; pages++ {
		us, more, err := s.ListUsers(ctx, after, 2)
		if err != nil {
			t.Fatal(err)
		}
		if pages > 3 {
			t.Fatal("ListUsers does not end")
		}
		for _, u := range us {
			if u.Email == "" || u.CreatedAt.IsZero() {
				t.Fatalf("listed user %+v", u)
			}
			got = append(got, u.ID)
		}
		if !more {
			break
		}
		after = us[len(us)-1].ID
	}
	// Other tests of the suite may have made accounts in the same store:
	// these three appear once each, in their order.
	var mine []string
	for _, id := range got {
		if slices.Contains(ids, id) {
			mine = append(mine, id)
		}
	}
	if !slices.Equal(mine, ids) {
		t.Fatalf("listed %v, want %v in this order", mine, ids)
	}
	if us, more, err := s.ListUsers(ctx, "usr_unknown", 10); err != nil || len(us) != 0 || more {
		t.Fatalf("after an unknown id: %v %v %v, want nothing", us, more, err)
	}
}
