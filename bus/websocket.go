package bus

import "github.com/nats-io/nats-server/v2/server"

// noWebPage is the one origin the WebSocket listener lists when none is
// configured: an https origin, which no request to a listener without
// TLS can match under the same-origin rule (see refuseEveryOrigin).
const noWebPage = "https://no-web-page.invalid"

// refuseEveryOrigin makes the WebSocket listener refuse every request
// that names an origin, before the upgrade: with no origins configured,
// no web page may connect. Browsers name the page's origin with every
// WebSocket; other clients (the Go client, nats.ws in node) name none and
// are not affected.
//
// nats-server has no setting for "no origin at all", and its same-origin
// rule alone compares Origin with the request's own Host, which a page on
// a name re-pointed to 127.0.0.1 (DNS rebinding) passes: its origin is
// http://rebound.example:PORT, and so is the Host it connects to. So both
// checks are on, and each refuses what the other lets by: same-origin
// wants the scheme of the request (http: the listener has no TLS), the
// list wants its only entry (https). No origin is both; one that is no
// URL (a sandboxed page's "null") fails both.
func refuseEveryOrigin(ws *server.WebsocketOpts) {
	ws.SameOrigin = true
	ws.AllowedOrigins = []string{noWebPage}
}
