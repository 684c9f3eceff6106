package serving

import (
	"net"
	"net/url"
	"strconv"
)

// A node restarted with its state listens where it listened before when
// it was told to pick a free port (port 0, the default) and that port is
// free again: its clients hold the old URL (in their credentials files,
// in their nats connections' server lists) and reconnect to it by
// themselves. A port that is taken meanwhile gives way to a new free one;
// clients then need the new URL (the state file and credentials files
// have it).

// reusePort is the port the bus listens on: port as given, unless it is
// 0 and last (the URL of the last start's bus) was on the same host at a
// port that is free now.
func (lu *localUsers) reusePort(host string, port int, last string) int {
	if port != 0 || last == "" {
		return port
	}
	u, err := url.Parse(last)
	if err != nil || u.Hostname() != host {
		return port
	}
	p, err := strconv.Atoi(u.Port())
	if err != nil || p <= 0 || p > 65535 || !portFree(host, p) {
		return port
	}
	return p
}

// reuseWebSocket is the WebSocket listener (host:port): with port 0,
// the last start's port on the same host when it is free.
func (lu *localUsers) reuseWebSocket(listen string) string {
	host, portText, err := net.SplitHostPort(listen)
	if err != nil || portText != "0" {
		return listen
	}
	if p := lu.reusePort(host, 0, lu.lastWebSocket); p != 0 {
		return net.JoinHostPort(host, strconv.Itoa(p))
	}
	return listen
}

// portFree reports whether a TCP listener can be had on host:port now.
func portFree(host string, port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return false
	}
	l.Close()
	return true
}
