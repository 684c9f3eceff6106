package cdpdriver

import (
	"context"
	"time"

	"github.com/mafredri/cdp/protocol/storage"
)

// Cookie is a cookie the browser holds.
type Cookie struct {
	Name, Value string
	// Domain is the cookie's domain: with a leading dot a domain cookie
	// (it goes to subdomains too), without one a host-only cookie.
	Domain, Path     string
	Secure, HTTPOnly bool
	Expires          time.Time // zero for a session cookie
}

// Cookies returns every cookie of the browser's default context
// (Storage.getCookies on the browser endpoint).
func (b *Browser) Cookies(ctx context.Context) ([]Cookie, error) {
	reply, err := b.client.Storage.GetCookies(ctx, storage.NewGetCookiesArgs())
	if err != nil {
		return nil, b.wrap(ctx, "Storage.getCookies", err)
	}
	out := make([]Cookie, 0, len(reply.Cookies))
	for _, c := range reply.Cookies {
		cookie := Cookie{Name: c.Name, Value: c.Value, Domain: c.Domain, Path: c.Path, Secure: c.Secure, HTTPOnly: c.HTTPOnly}
		if !c.Session && c.Expires > 0 {
			cookie.Expires = time.Unix(0, int64(c.Expires*float64(time.Second)))
		}
		out = append(out, cookie)
	}
	return out, nil
}
