package webfetch

import (
	"context"
	"errors"
	"io"
	"net"
	"net/url"

	"github.com/framebus/framebus/actors/egress"
	"github.com/framebus/framebus/protocol"
)

// failed turns what went wrong in where (asking) into a *protocol.Error with a
// stable code: permission_denied when the Dialer refused the address the
// host resolved to, timeout past the fetch's deadline, cancelled when the
// caller gave up, and fetch_failed for everything the network or the
// server did (refused, reset, closed early, not HTTP).
func (f *Fetcher) failed(ctx context.Context, p prepared, where string, err error) error {
	var pe *protocol.Error
	if errors.As(err, &pe) {
		return pe
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err // its text repeats the method and URL
	}
	var denied *egress.DeniedError
	if errors.As(err, &denied) {
		return protocol.Errorf(protocol.CodePermissionDenied, "%s: %w; nothing was sent to it", where, denied)
	}
	var ne net.Error
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded), errors.Is(err, context.DeadlineExceeded),
		errors.As(err, &ne) && ne.Timeout():
		return protocol.Errorf(protocol.CodeTimeout, "%s: no complete answer within %s", where, p.timeout)
	case ctx.Err() != nil:
		return protocol.Errorf(protocol.CodeCancelled, "%s: cancelled: %w", where, ctx.Err())
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return protocol.Errorf(protocol.CodeFetchFailed, "%s: the server closed the connection before the answer was complete: %w", where, err)
	}
	return protocol.Errorf(protocol.CodeFetchFailed, "%s: %w", where, err)
}
