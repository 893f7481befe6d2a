package ams

import (
	"errors"
	"fmt"
)

// ErrorKind classifies an error independently of the transport. The HTTP
// layer maps each kind to one status code and error type.
type ErrorKind int

// Error kinds. The comment names the HTTP status the API answers.
const (
	EINTERNAL        ErrorKind = iota // 500
	EINVALID                          // 400
	EUNAUTHENTICATED                  // 401
	EFORBIDDEN                        // 403
	ENOTFOUND                         // 404
	EMETHOD                           // 405
	ECONFLICT                         // 409
	ETOOLARGE                         // 413
	EUNSUPPORTED                      // 415
	ERATELIMIT                        // 429
	EUPSTREAM                         // 502: an assistant engine or other upstream failed
	EUNAVAILABLE                      // 503
)

// The API's error types: the "type" of the error body, one per family of
// kinds (see ErrorKind.Type).
const (
	TypeInvalidRequest = "invalid_request_error"
	TypeAuthentication = "authentication_error"
	TypePermission     = "permission_error"
	TypeRateLimit      = "rate_limit_error"
	TypeAPI            = "api_error"
)

// Type returns the API's error type of kind k, as the error body, a
// failed action and a failed turn show it: api_error for the kinds the
// service answers with a 5xx, invalid_request_error for the other 4xx
// kinds but 401, 403 and 429, which have their own.
func (k ErrorKind) Type() string {
	switch k {
	case EUNAUTHENTICATED:
		return TypeAuthentication
	case EFORBIDDEN:
		return TypePermission
	case ERATELIMIT:
		return TypeRateLimit
	case EINTERNAL, EUPSTREAM, EUNAVAILABLE:
		return TypeAPI
	}
	return TypeInvalidRequest
}

// Error is an error whose message may be shown to the API caller. Any
// other error is internal: it is logged and the caller sees a generic
// message.
type Error struct {
	Kind    ErrorKind
	Code    string // machine-readable code, e.g. "resource_missing"
	Message string // human-readable, safe to show
	Param   string // the request parameter at fault, if any

	cause error // what went wrong inside, for the log (Unavailable); never shown
}

// Unwrap returns the internal cause of an error made by Unavailable or
// TimedOut (nil for others), so that the log keeps it and errors.Is sees
// through it.
func (e *Error) Unwrap() error { return e.cause }

func (e *Error) Error() string {
	if e.cause != nil { // for the log: the caller is shown Message only
		return fmt.Sprintf("ams %s: %s: %v", e.Code, e.Message, e.cause)
	}
	if e.Param != "" {
		return fmt.Sprintf("ams %s: %s (param %s)", e.Code, e.Message, e.Param)
	}
	return fmt.Sprintf("ams %s: %s", e.Code, e.Message)
}

// Errorf returns an *Error of kind k with the given code and message.
func Errorf(k ErrorKind, code, format string, args ...any) *Error {
	return &Error{Kind: k, Code: code, Message: fmt.Sprintf(format, args...)}
}

// ParamError returns an EINVALID error naming the parameter at fault.
func ParamError(code, param, format string, args ...any) *Error {
	return &Error{Kind: EINVALID, Code: code, Param: param, Message: fmt.Sprintf(format, args...)}
}

// NotFound returns the ENOTFOUND error for a record of the given type. The
// same answer is given for ids that do not exist and for ids that belong to
// another account.
func NotFound(object, id string) *Error {
	return &Error{Kind: ENOTFOUND, Code: "resource_missing", Message: fmt.Sprintf("No such %s: '%s'", object, Clip(id))}
}

// Codes of the EUNAVAILABLE errors of a store that cannot serve (the API
// answers them 503 with Retry-After).
const (
	// CodeUnavailable: the database cannot be reached or cannot write (it
	// is down, restarting or unreachable, or its disk is full).
	CodeUnavailable = "service_unavailable"
	// CodeTimeout: the request ran out of time (its deadline, or the
	// database's statement timeout).
	CodeTimeout = "request_timeout"
)

// Unavailable returns the EUNAVAILABLE error of a database that cannot be
// reached or cannot write; cause is kept for the log, never shown.
func Unavailable(cause error) *Error {
	return &Error{Kind: EUNAVAILABLE, Code: CodeUnavailable, cause: cause,
		Message: "The service is temporarily unavailable. Retry later."}
}

// TimedOut returns the EUNAVAILABLE error of a request that ran out of
// time; cause is kept for the log, never shown.
func TimedOut(cause error) *Error {
	return &Error{Kind: EUNAVAILABLE, Code: CodeTimeout, cause: cause,
		Message: "The request took too long and was stopped. Retry later."}
}

// IsStorageUnavailable reports whether err is Unavailable's: the database
// could not be reached or could not write.
func IsStorageUnavailable(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Kind == EUNAVAILABLE && e.Code == CodeUnavailable
}

// ErrorKindOf returns the kind of err, or EINTERNAL if err is not an *Error.
func ErrorKindOf(err error) ErrorKind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return EINTERNAL
}

// WithParam returns err naming param when it is an ENOTFOUND *Error (a
// copy, so that a shared error value is not changed): the request field
// whose id was not found. Any other error is returned as it is.
func WithParam(err error, param string) error {
	var e *Error
	if errors.As(err, &e) && e.Kind == ENOTFOUND {
		c := *e
		c.Param = param
		return &c
	}
	return err
}

// ActionErrorOf returns err in the API's error vocabulary, as a failed
// action or turn records it: the type, code, message and param of an
// *Error. It returns nil for any other error (an internal one, whose text
// is never shown).
func ActionErrorOf(err error) *ActionError {
	var e *Error
	if !errors.As(err, &e) {
		return nil
	}
	return &ActionError{Type: e.Kind.Type(), Code: e.Code, Message: e.Message, Param: e.Param}
}

// IsNotFound reports whether err is an ENOTFOUND error.
func IsNotFound(err error) bool { return err != nil && ErrorKindOf(err) == ENOTFOUND }

// FieldErrors is the error of an input with several wrong fields: one
// EINVALID *Error per field, in the order of the form or request. Its
// first error is the one errors.As finds, so the API answers that one;
// the account pages show them all.
type FieldErrors []*Error

// Error returns the first error's message.
func (e FieldErrors) Error() string { return e[0].Error() }

// Unwrap returns the errors, for errors.As and errors.Is.
func (e FieldErrors) Unwrap() []error {
	out := make([]error, len(e))
	for i, x := range e {
		out[i] = x
	}
	return out
}

// JoinFieldErrors returns errs as one error: nil when empty.
func JoinFieldErrors(errs []*Error) error {
	if len(errs) == 0 {
		return nil
	}
	return FieldErrors(errs)
}

// Fields returns the field errors of err: the list of a FieldErrors, or
// the one EINVALID error naming a field; nil for any other error.
func Fields(err error) []*Error {
	var errs FieldErrors
	var one *Error
	switch {
	case errors.As(err, &errs):
		return errs
	case errors.As(err, &one) && one.Kind == EINVALID && one.Param != "":
		return []*Error{one}
	}
	return nil
}
