package protocol

import (
	"errors"
	"fmt"
)

// Error is an error with a stable code. It is what travels in replies as
// {"ok": false, "error": Message, "code": Code}.
type Error struct {
	Code    Code
	Message string
	Err     error // the cause, if any; not sent on the wire
}

func (e *Error) Error() string { return e.Message }

func (e *Error) Unwrap() error { return e.Err }

// Is makes errors.Is(err, &Error{Code: c}) match any *Error with code c.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Message == "" && t.Code == e.Code
}

// Errorf builds an *Error with the given code and a formatted message.
// A %w verb in format is kept as the cause.
func Errorf(code Code, format string, args ...any) *Error {
	err := fmt.Errorf(format, args...)
	return &Error{Code: code, Message: err.Error(), Err: errors.Unwrap(err)}
}

// CodeOf returns the code of err: its *Error's code, or CodeInternal for any
// other non-nil error, or "" for nil.
func CodeOf(err error) Code {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeInternal
}

// badRequest is the validation error: always names what was wrong.
func badRequest(format string, args ...any) *Error {
	return Errorf(CodeBadRequest, format, args...)
}
