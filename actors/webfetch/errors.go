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

// failed turns what went wrong asking u into a *protocol.Error with a
// stable code: permission_denied when the Dialer refused the address the
// host resolved to, timeout past the fetch's deadline, cancelled when the
// caller gave up, and fetch_failed for everything the network or the
// server did (refused, reset, closed early, not HTTP).
func (f *Fetcher) failed(ctx context.Context, p prepared, u *url.URL, err error) error {
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
		return protocol.Errorf(protocol.CodePermissionDenied, "fetch %s: %w; nothing was sent to it", u, denied)
	}
	var ne net.Error
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded), errors.Is(err, context.DeadlineExceeded),
		errors.As(err, &ne) && ne.Timeout():
		return protocol.Errorf(protocol.CodeTimeout, "fetch %s: no complete answer within %s", u, p.timeout)
	case ctx.Err() != nil:
		return protocol.Errorf(protocol.CodeCancelled, "fetch %s: cancelled: %w", u, ctx.Err())
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return protocol.Errorf(protocol.CodeFetchFailed, "fetch %s: the server closed the connection before the answer was complete: %w", u, err)
	}
	return protocol.Errorf(protocol.CodeFetchFailed, "fetch %s: %w", u, err)
}
