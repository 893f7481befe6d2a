package pages

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/amsdev/ams/internal/seal"
)

// Cookies of the account pages. The flash cookie carries the messages of
// the page after a redirect, signed and bound to the session; the secret
// cookie carries a secret shown once (a new API key) from the form post to
// the page that shows it, sealed (AES-256-GCM) and bound to the session.
const (
	flashCookie  = "ams_flash"
	secretCookie = "ams_secret"
)

// setFlashes keeps fl for the next page of this browser.
func (s *Server) setFlashes(w http.ResponseWriter, r *http.Request, sid string, fl []Flash) {
	if len(fl) == 0 {
		return
	}
	b, _ := json.Marshal(fl)
	payload := base64.RawURLEncoding.EncodeToString(b)
	http.SetCookie(w, &http.Cookie{Name: flashCookie, Value: payload + "." + s.flashMAC(sid, payload), Path: "/",
		MaxAge: 300, HttpOnly: true, Secure: s.OAuth.SecureCookies(r), SameSite: http.SameSiteLaxMode})
}

// takeFlashes returns the flashes kept for this page and forgets them.
// A cookie that was not made for this session is ignored.
func (s *Server) takeFlashes(w http.ResponseWriter, r *http.Request, sid string) []Flash {
	ck, err := r.Cookie(flashCookie)
	if err != nil {
		return nil
	}
	http.SetCookie(w, &http.Cookie{Name: flashCookie, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, Secure: s.OAuth.SecureCookies(r), SameSite: http.SameSiteLaxMode})
	payload, mac, ok := strings.Cut(ck.Value, ".")
	if !ok || !hmac.Equal([]byte(mac), []byte(s.flashMAC(sid, payload))) {
		return nil
	}
	b, err := base64.RawURLEncoding.DecodeString(payload)
	if err != nil {
		return nil
	}
	var fl []Flash
	if json.Unmarshal(b, &fl) != nil || len(fl) > 10 {
		return nil
	}
	return fl
}

func (s *Server) flashMAC(sid, payload string) string {
	m := hmac.New(sha256.New, s.flashKey)
	m.Write([]byte(sid + "\x00" + payload))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// KeepSecret hands a secret that is shown once (a new API key, a client
// secret) to the next page, which takes it with TakeSecret. It travels
// in a cookie, sealed and bound to the session and to name (e.g. the id
// of the key), that lives at most 10 minutes and is cleared when read;
// so the page after the redirect shows it, and a reload no longer does.
func (c *Ctx) KeepSecret(name, secret string) {
	sl, err := seal.New(c.s.secretKey)
	if err != nil {
		panic(err) // the key is always 32 bytes
	}
	http.SetCookie(c.w, &http.Cookie{Name: secretCookie, Value: sl.Seal(secret, c.SessionID+"\x00"+name), Path: "/account",
		MaxAge: 600, HttpOnly: true, Secure: c.s.OAuth.SecureCookies(c.r), SameSite: http.SameSiteStrictMode})
}

// TakeSecret returns the secret KeepSecret kept under name for this
// session, once: it clears the cookie. ok is false when there is none
// (already shown, expired, or made for another name or session).
func (c *Ctx) TakeSecret(name string) (secret string, ok bool) {
	ck, err := c.r.Cookie(secretCookie)
	if err != nil {
		return "", false
	}
	sl, err := seal.New(c.s.secretKey)
	if err != nil {
		panic(err)
	}
	secret, err = sl.Open(ck.Value, c.SessionID+"\x00"+name)
	if err != nil {
		return "", false
	}
	http.SetCookie(c.w, &http.Cookie{Name: secretCookie, Value: "", Path: "/account", MaxAge: -1,
		HttpOnly: true, Secure: c.s.OAuth.SecureCookies(c.r), SameSite: http.SameSiteStrictMode})
	return secret, true
}
