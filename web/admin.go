package web

import (
	"net/http"

	"github.com/amsdev/ams"
)

func init() {
	AddRoutes(func(s *Server) {
		s.Page("GET /account/admin/waitlist", "waitlist.html", s.waitlist)
		s.Page("POST /account/admin/waitlist/{id}/approve", "waitlist.html", s.approve)
	})
}

// waitlistData is the data of the waitlist admin page.
type waitlistData struct {
	Users     []*ams.User
	More      bool
	Supported bool // the store lists the waitlist
}

// waitlistLimit is how many waiting accounts the page shows.
const waitlistLimit = 100

// waitlist lists the accounts on the early-access waitlist, oldest first,
// to administrators.
func (s *Server) waitlist(w http.ResponseWriter, r *http.Request, c *Ctx) (any, error) {
	if err := c.RequireAdmin(); err != nil {
		return nil, err
	}
	wl, ok := s.Store.(ams.Waitlist)
	if u, wrapped := s.Store.(interface{ Unwrap() ams.Store }); !ok && wrapped {
		wl, ok = u.Unwrap().(ams.Waitlist) // the store the services' watch wraps
	}
	if !ok {
		return waitlistData{}, nil
	}
	us, more, err := wl.ListWaitlist(r.Context(), waitlistLimit)
	if err != nil {
		return nil, err
	}
	return waitlistData{Users: us, More: more, Supported: true}, nil
}

// approve lets an account off the waitlist.
func (s *Server) approve(w http.ResponseWriter, r *http.Request, c *Ctx) (any, error) {
	if err := c.RequireAdmin(); err != nil {
		return nil, err
	}
	u, err := s.Store.FindUser(r.Context(), r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	if u.Approved() {
		c.Flash(FlashInfo, u.Email+" was already approved.")
		return c.Redirect("/account/admin/waitlist")
	}
	now := c.Now
	if _, err := s.Store.UpdateUser(r.Context(), u.ID, ams.UserUpdate{ApprovedAt: &now}, now); err != nil {
		return nil, err
	}
	s.Logger.Info("account approved", "user", u.ID, "by", c.User.ID)
	c.Flash(FlashSuccess, u.Email+" was approved: the account can create API keys now.")
	return c.Redirect("/account/admin/waitlist")
}
