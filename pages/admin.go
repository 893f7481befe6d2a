package pages

import (
	"net/http"

	"github.com/amsdev/ams"
)

// waitlistData is the data of the waitlist admin page.
type waitlistData struct {
	Users []*ams.User
	More  bool
}

// waitlistLimit is how many waiting accounts the page shows.
const waitlistLimit = 100

// waitlist lists the accounts on the early-access waitlist, oldest first,
// to administrators.
func (s *Server) waitlist(w http.ResponseWriter, r *http.Request, c *Ctx) (any, error) {
	if err := c.RequireAdmin(); err != nil {
		return nil, err
	}
	us, more, err := s.Store.ListWaitlist(r.Context(), waitlistLimit)
	if err != nil {
		return nil, err
	}
	return waitlistData{Users: us, More: more}, nil
}

// approve lets an account off the waitlist.
func (s *Server) approve(w http.ResponseWriter, r *http.Request, c *Ctx) (any, error) {
	if err := c.RequireAdmin(); err != nil {
		return nil, err
	}
	u, approved, err := s.Accounts.Approve(r.Context(), r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	if !approved {
		c.Flash(FlashInfo, u.Email+" was already approved.")
		return c.Redirect("/account/admin/waitlist")
	}
	s.Logger.Info("account approved", "user", u.ID, "by", c.User.ID)
	c.Flash(FlashSuccess, u.Email+" was approved: the account can create API keys now.")
	return c.Redirect("/account/admin/waitlist")
}
