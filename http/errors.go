package http

import (
	"context"
	"errors"
	"net/http"
	"os"
	"strconv"
	"syscall"

	"github.com/amsdev/ams"
)

// errorBody is the documented error envelope of every non-2xx /v1 answer.
type errorBody struct {
	Error     errorDetail `json:"error"`
	RequestID string      `json:"request_id"`
}

type errorDetail struct {
	Type    string `json:"type"`
	Code    string `json:"code"`
	Message string `json:"message"`
	Param   string `json:"param,omitempty"`
}

var kindStatus = map[ams.ErrorKind]int{
	ams.EINTERNAL:        http.StatusInternalServerError,
	ams.EINVALID:         http.StatusBadRequest,
	ams.EUNAUTHENTICATED: http.StatusUnauthorized,
	ams.EFORBIDDEN:       http.StatusForbidden,
	ams.ENOTFOUND:        http.StatusNotFound,
	ams.EMETHOD:          http.StatusMethodNotAllowed,
	ams.ECONFLICT:        http.StatusConflict,
	ams.ETOOLARGE:        http.StatusRequestEntityTooLarge,
	ams.EUNSUPPORTED:     http.StatusUnsupportedMediaType,
	ams.ERATELIMIT:       http.StatusTooManyRequests,
	ams.EUPSTREAM:        http.StatusBadGateway,
	ams.EUNAVAILABLE:     http.StatusServiceUnavailable,
}

// retryAfterUnavailable is the Retry-After, in seconds, of a 503: the
// database could not serve, or the request ran out of time.
const retryAfterUnavailable = 5

// writeError answers err with the documented error body. Errors that are
// not *ams.Error are internal: they are logged with the request id and the
// caller sees only a generic message.
//
// An error that comes after the answer began (its status line is sent)
// cannot be answered: it is only logged (see cutShort).
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	if sw := stateOf(r.Context()).resp; sw != nil && sw.status != 0 {
		s.cutShort(r, err)
		return
	}
	var e *ams.Error
	if !errors.As(err, &e) {
		if errors.Is(err, context.DeadlineExceeded) && r.Context().Err() != nil {
			// The request's deadline (Server.RequestTimeout) ran out.
			e = ams.TimedOut(err)
		} else if errors.Is(err, context.Canceled) && r.Context().Err() != nil {
			// The client went away; there is no one to answer.
			s.Logger.Info("request canceled by client", "request_id", requestID(r.Context()), "path", r.URL.Path)
			e = &ams.Error{Kind: ams.EUNAVAILABLE, Code: "request_canceled", Message: "The request was canceled."}
		} else {
			s.Logger.Error("internal error", "request_id", requestID(r.Context()), "method", r.Method, "path", r.URL.Path, "err", err)
			e = &ams.Error{Kind: ams.EINTERNAL, Code: "internal_error",
				Message: "An internal error occurred. If it persists, contact support with the request id."}
		}
	}
	status := kindStatus[e.Kind]
	switch status {
	case http.StatusUnauthorized:
		if r.URL.Path == MCPPath {
			w.Header().Set("WWW-Authenticate", s.mcpChallenge(r))
		} else {
			w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
		}
	case http.StatusServiceUnavailable:
		if cause := errors.Unwrap(e); cause != nil {
			// The database could not serve (ams.Unavailable, ams.TimedOut):
			// the cause is for the log, the caller sees the code.
			s.Logger.Warn("request failed: the database could not serve", "request_id", requestID(r.Context()),
				"method", r.Method, "path", r.URL.Path, "code", e.Code, "err", cause)
		}
		w.Header().Set("Retry-After", strconv.Itoa(retryAfterUnavailable))
	}
	writeJSON(w, status, errorBody{
		Error:     errorDetail{Type: e.Kind.Type(), Code: e.Code, Message: e.Message, Param: e.Param},
		RequestID: requestID(r.Context()),
	})
}

// cutShort logs an error that came after the answer began. Most are a
// write that failed because the client closed the connection or stopped
// reading (broken pipe, reset, the write deadline): no fault of the
// service, logged at info. Any other is logged as an error.
func (s *Server) cutShort(r *http.Request, err error) {
	if clientGone(err) || r.Context().Err() != nil {
		s.Logger.Info("response cut short: the client went away", "request_id", requestID(r.Context()),
			"method", r.Method, "path", r.URL.Path, "err", err)
		return
	}
	s.Logger.Error("error after the response began", "request_id", requestID(r.Context()),
		"method", r.Method, "path", r.URL.Path, "err", err)
}

// clientGone reports whether err is a write to a client that closed the
// connection or stopped reading.
func clientGone(err error) bool {
	return errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, os.ErrDeadlineExceeded)
}
