package pages

import (
	"net/http"
	"strings"

	"github.com/amsdev/ams"
	"github.com/amsdev/ams/account"
)

// checkEmailData is the data of the "check your e-mail" page, answered to
// a sign-up and to a password-reset request alike. It holds nothing that
// depends on whether the address is registered: the page is the same,
// byte for byte, for an address with an account and one without.
type checkEmailData struct {
	// Reset is true after a password-reset request, false after a
	// sign-up.
	Reset bool
	Email string
}

// forgotData is the data of the forgot-password form.
type forgotData struct{ Email string }

// forgotForm shows the form that asks for a password-reset link.
func (s *Server) forgotForm(w http.ResponseWriter, r *http.Request, c *Ctx) (any, error) {
	return forgotData{Email: strings.TrimSpace(r.URL.Query().Get("email"))}, nil
}

// forgot e-mails a password-reset link to the address, if it has an
// account, and answers the same page either way.
func (s *Server) forgot(w http.ResponseWriter, r *http.Request, c *Ctx) (any, error) {
	d := forgotData{Email: strings.TrimSpace(r.PostForm.Get("email"))}
	err := s.Accounts.RequestPasswordReset(r.Context(), d.Email)
	if errs := ams.Fields(err); errs != nil {
		for _, e := range errs {
			c.Fail(e.Param, e.Message)
		}
		return d, nil
	} else if err != nil {
		return nil, err
	}
	c.Render("check_email.html")
	return checkEmailData{Reset: true, Email: account.NormalizeEmail(d.Email)}, nil
}

// resetData is the data of the form of a password-reset link.
type resetData struct{ Token string }

// resetForm shows the new-password form of a usable reset link, or the
// error page saying why the link cannot be used.
func (s *Server) resetForm(w http.ResponseWriter, r *http.Request, c *Ctx) (any, error) {
	tok := r.PathValue("token")
	if err := s.Accounts.CheckToken(r.Context(), ams.TokenPasswordReset, tok); err != nil {
		return s.linkError(c, err, ams.TokenPasswordReset)
	}
	return resetData{Token: tok}, nil
}

// reset sets the new password of a reset link, signs out every browser of
// the account, and shows the sign-in link.
func (s *Server) reset(w http.ResponseWriter, r *http.Request, c *Ctx) (any, error) {
	tok := r.PathValue("token")
	f := r.PostForm
	u, err := s.Accounts.ResetPassword(r.Context(), account.PasswordReset{Token: tok, New: f.Get("new_password"), Confirm: f.Get("new_password_confirm")})
	if errs := ams.Fields(err); errs != nil {
		for _, e := range errs {
			c.Fail(e.Param, e.Message)
		}
		return resetData{Token: tok}, nil
	} else if err != nil {
		return s.linkError(c, err, ams.TokenPasswordReset)
	}
	s.Logger.Info("password reset", "user", u.ID)
	// This browser's session, if it had one, ended with the others.
	c.User, c.SessionID = nil, ""
	c.Render("link_done.html")
	return linkDone{Title: "Your password was changed", Reset: true, Email: u.Email}, nil
}

// linkDone is the data of the page shown after a link did its work.
type linkDone struct {
	Title string
	Reset bool // a password reset (else an e-mail verification)
	Email string
}

// verifyEmail uses a verification link and says so.
func (s *Server) verifyEmail(w http.ResponseWriter, r *http.Request, c *Ctx) (any, error) {
	u, err := s.Accounts.VerifyEmail(r.Context(), r.PathValue("token"))
	if err != nil {
		return s.linkError(c, err, ams.TokenEmailVerification)
	}
	s.Logger.Info("e-mail verified", "user", u.ID)
	if c.User != nil && c.User.ID == u.ID {
		c.User = u // the banner goes at once
	}
	c.Render("link_done.html")
	return linkDone{Title: "Your e-mail address is verified", Email: u.Email}, nil
}

// resendVerification e-mails the signed-in account a new verification
// link.
func (s *Server) resendVerification(w http.ResponseWriter, r *http.Request, c *Ctx) (any, error) {
	if c.User.Verified() {
		c.Flash(FlashInfo, "Your e-mail address is verified already.")
		return c.Redirect("/account")
	}
	sent, err := s.Accounts.SendVerification(r.Context(), c.User)
	if err != nil {
		return nil, err
	}
	if sent {
		c.Flash(FlashSuccess, "We sent a new verification link to "+c.User.Email+". It works once, within 24 hours.")
	} else {
		c.Flash(FlashError, "We already sent several verification e-mails today. Look for them in your inbox (and spam folder), or try again tomorrow.")
	}
	return c.Redirect("/account")
}

// linkErrorData is the data of the page of a link that cannot be used.
type linkErrorData struct {
	Message string
	// Again is where to ask for a new link; AgainLabel names it.
	Again, AgainLabel string
}

// linkError answers a link that cannot be used (CheckToken's errors,
// codes token_*) with the page saying why: 404 for an unknown link, 410
// Gone for one used already or expired. Other errors are returned as they
// are.
func (s *Server) linkError(c *Ctx, err error, purpose ams.TokenPurpose) (any, error) {
	e, ok := err.(*ams.Error)
	if !ok || !strings.HasPrefix(e.Code, "token_") {
		return nil, err
	}
	c.Status = http.StatusGone
	if e.Code == "token_invalid" {
		c.Status = http.StatusNotFound
	}
	c.Render("link_error.html")
	d := linkErrorData{Message: e.Message, Again: "/forgot-password", AgainLabel: "Ask for a new password-reset link"}
	if purpose == ams.TokenEmailVerification {
		d.Again, d.AgainLabel = "/account", "Sign in to ask for a new verification link"
	}
	return d, nil
}
