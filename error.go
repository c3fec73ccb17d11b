package vigil

import (
	"errors"
	"fmt"
)

// Error codes. The HTTP layer maps each to one status; nothing else does.
const (
	EINVALID      = "invalid_argument"       // 400
	EUNAUTHORIZED = "unauthenticated"        // 401
	EFORBIDDEN    = "permission_denied"      // 403
	ENOTFOUND     = "not_found"              // 404
	ETIMEOUT      = "request_timeout"        // 408: the request's body did not arrive in time
	ECONFLICT     = "conflict"               // 409
	ETOOLARGE     = "payload_too_large"      // 413
	EUNSUPPORTED  = "unsupported_media_type" // 415
	ERATELIMITED  = "rate_limited"           // 429
	EUNAVAILABLE  = "unavailable"            // 503
	ENOSPACE      = "insufficient_storage"   // 507
	EINTERNAL     = "internal"               // 500
)

// FieldIssue names one problem with one field of a request.
type FieldIssue struct {
	Field string `json:"field"`
	Issue string `json:"issue"`
}

// Error is Vigil's one error type. Code is machine-readable, Message is safe
// to show to a user, Details lists field problems, Op and Err carry the
// context for logs only.
type Error struct {
	Code    string
	Message string
	Details []FieldIssue
	Op      string
	Err     error
}

func (e *Error) Error() string {
	msg := e.Message
	if e.Err != nil {
		if msg != "" {
			msg += ": "
		}
		msg += e.Err.Error()
	}
	if e.Op != "" {
		return e.Op + ": " + msg
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error with the given code and formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Invalid returns an invalid_argument error naming the fields at fault.
func Invalid(issues ...FieldIssue) *Error {
	msg := "invalid request"
	if len(issues) > 0 {
		msg = "invalid " + issues[0].Field + ": " + issues[0].Issue
	}
	return &Error{Code: EINVALID, Message: msg, Details: issues}
}

// InvalidField is Invalid for a single field.
func InvalidField(field, issue string) *Error {
	return Invalid(FieldIssue{Field: field, Issue: issue})
}

// NotFound returns a not_found error for a kind of record ("incident").
func NotFound(kind string) *Error {
	return &Error{Code: ENOTFOUND, Message: kind + " not found"}
}

// ErrorCode returns the code of the first *Error in err's chain, or
// EINTERNAL for any other non-nil error.
func ErrorCode(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) && e.Code != "" {
		return e.Code
	}
	return EINTERNAL
}

// Transient reports whether err says that a dependency cannot do the work
// now (EUNAVAILABLE: unreachable, busy, failing; ENOSPACE: out of disk)
// rather than that the work itself is wrong: the same work may succeed
// later, so it must be kept and retried, never given up on.
func Transient(err error) bool {
	switch ErrorCode(err) {
	case EUNAVAILABLE, ENOSPACE:
		return true
	}
	return false
}

// ErrorMessage returns the user-facing message of err. Internal errors get
// a generic text so that nothing of the internals leaks.
func ErrorMessage(err error) string {
	var e *Error
	if errors.As(err, &e) && e.Code != EINTERNAL && e.Message != "" {
		return e.Message
	}
	return "internal error"
}

// ErrorDetails returns the field issues carried by err, if any.
func ErrorDetails(err error) []FieldIssue {
	var e *Error
	if errors.As(err, &e) {
		return e.Details
	}
	return nil
}
