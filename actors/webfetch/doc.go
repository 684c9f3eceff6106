// Package webfetch is the engine of the http resource (ADR-006): one HTTP
// request, its redirects followed under the node's whitelist, its answer
// read within a size cap and turned into a protocol.FetchReply. It touches
// no tab; the node answers Subjects.HTTPFetch with it and the search
// resource fetches every engine page through it.
//
//	f := webfetch.New(webfetch.Options{Dialer: node.Dialer(), Check: wl.Check})
//	reply, err := f.Fetch(ctx, protocol.FetchRequest{URL: "https://example.com/", Readable: true})
//	// err is a *protocol.Error: bad_request, permission_denied, timeout or fetch_failed.
//
// The whitelist is applied twice, as for the browser: Check judges every
// URL (the first and each redirect hop, by scheme and host) before a byte
// is sent to it, and the Dialer (actors/egress) resolves the host itself
// and connects only to addresses the whitelist allows, so a name that
// resolves to loopback or a private address (DNS rebinding) reaches
// nothing. Check is given the URL as Go parsed it, the form the request
// is then sent to, so the two cannot disagree on the host.
//
// The body is read up to the cap and no further: a larger body is cut
// (Truncated) and its connection closed, never read whole. Bytes is then
// the length the server declared (Content-Length) when it declared one,
// else the bytes read.
//
// The body is text when it decodes in its declared charset (a byte order
// mark, the Content-Type charset, an HTML page's meta charset; labels are
// read as browsers read them, golang.org/x/net/html/charset, so
// ISO-8859-1 is windows-1252) or, declaring none, when it is valid UTF-8
// of a textual type; anything else is base64, so no byte is lost.
//
// Readable uses codeberg.org/readeck/go-readability/v2, the maintained
// fork of go-shiori/go-readability (a line-by-line port of Mozilla's
// Readability.js, the reader view of Firefox), kept in step with
// Readability.js 0.6 and faster than the original: the extraction a
// browser's reader view does, not a heuristic of our own.
package webfetch
