package client

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Error types of the API's error body.
const (
	ErrorTypeInvalidRequest = "invalid_request_error" // 400, 404, 405, 409, 413, 415
	ErrorTypeAuthentication = "authentication_error"  // 401
	ErrorTypePermission     = "permission_error"      // 403
	ErrorTypeRateLimit      = "rate_limit_error"      // 429
	ErrorTypeAPI            = "api_error"             // 5xx, and answers without an error body
)

// Error is a non-2xx answer of the API. Match it with errors.As:
//
//	var apiErr *client.Error
//	if errors.As(err, &apiErr) && apiErr.Code == "resource_missing" { ... }
type Error struct {
	// StatusCode is the HTTP status of the answer.
	StatusCode int
	// Type is the error class, one of the ErrorType constants.
	Type string
	// Code is the machine-readable reason, such as "resource_missing",
	// "parameter_invalid" or "rate_limit_exceeded". Empty when the answer
	// had no error body.
	Code string
	// Message is the human-readable explanation.
	Message string
	// Param names the offending parameter or header, when there is one.
	Param string
	// RequestID identifies the request in the server's logs; quote it to
	// support.
	RequestID string
	// RetryAfter is the wait the server asked for in Retry-After, 0 when
	// it gave none.
	RetryAfter time.Duration
	// Header holds the answer's headers (WWW-Authenticate, Allow,
	// X-RateLimit-*, ...).
	Header http.Header
}

// Error returns "ams: <status> <code>: <message>" with the parameter and
// request id when known.
func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "ams: %d", e.StatusCode)
	if code := e.Code; code != "" {
		b.WriteString(" " + code)
	} else if e.Type != "" {
		b.WriteString(" " + e.Type)
	}
	b.WriteString(": " + e.Message)
	if e.Param != "" {
		fmt.Fprintf(&b, " (param %s)", e.Param)
	}
	if e.RequestID != "" {
		fmt.Fprintf(&b, " (request %s)", e.RequestID)
	}
	return b.String()
}

// errorBody is the API's error envelope.
type errorBody struct {
	Error *struct {
		Type    string `json:"type"`
		Code    string `json:"code"`
		Message string `json:"message"`
		Param   string `json:"param"`
	} `json:"error"`
	RequestID string `json:"request_id"`
}

// parseError builds the *Error of a non-2xx answer whose body is raw.
func parseError(resp *http.Response, raw []byte, now time.Time) *Error {
	e := &Error{
		StatusCode: resp.StatusCode,
		RequestID:  resp.Header.Get("X-Request-Id"),
		RetryAfter: parseRetryAfter(resp.Header.Get("Retry-After"), now),
		Header:     resp.Header,
	}
	var body errorBody
	if err := json.Unmarshal(raw, &body); err == nil && body.Error != nil {
		e.Type, e.Code, e.Message, e.Param = body.Error.Type, body.Error.Code, body.Error.Message, body.Error.Param
		if body.RequestID != "" {
			e.RequestID = body.RequestID
		}
	}
	if e.Type == "" {
		e.Type = ErrorTypeAPI
	}
	if e.Message == "" {
		e.Message = http.StatusText(resp.StatusCode)
		if e.Message == "" {
			e.Message = fmt.Sprintf("HTTP status %d", resp.StatusCode)
		}
	}
	return e
}
