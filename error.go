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

// Error is an error whose message may be shown to the API caller. Any
// other error is internal: it is logged and the caller sees a generic
// message.
type Error struct {
	Kind    ErrorKind
	Code    string // machine-readable code, e.g. "resource_missing"
	Message string // human-readable, safe to show
	Param   string // the request parameter at fault, if any
}

func (e *Error) Error() string {
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
	return &Error{Kind: ENOTFOUND, Code: "resource_missing", Message: fmt.Sprintf("No such %s: '%s'", object, id)}
}

// ErrorKindOf returns the kind of err, or EINTERNAL if err is not an *Error.
func ErrorKindOf(err error) ErrorKind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return EINTERNAL
}

// IsNotFound reports whether err is an ENOTFOUND error.
func IsNotFound(err error) bool { return err != nil && ErrorKindOf(err) == ENOTFOUND }
