// Package viewer is framebus view: a web page for the people beside the
// agents. It shows every tab of every node live (its page as moving
// pictures, its frames, its plans' results, its handoffs and questions)
// and lets a person take a tab over, act in it and hand it back. It is a
// client of the bus like the CLI, with the rights of the credentials it
// is given: an observer's viewer watches, and its take-over is refused by
// the bus. Its page is embedded (go:embed) and loads nothing from
// elsewhere; see docs/people.md.
package viewer

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	busclient "github.com/framebus/framebus/bus/client"
	"github.com/framebus/framebus/protocol"
	"github.com/framebus/framebus/snaptext"
)

//go:embed assets
var assets embed.FS

// Options configure a viewer.
type Options struct {
	// Client is the bus connection; the viewer does not close it.
	Client *busclient.Client
	// Token is what a browser must bring (in the URL Server.URL gives,
	// then in a cookie): 16 characters or more.
	Token string
	// By names the person on their takeovers, handbacks and answers.
	By string
	// Log reports what goes wrong beside the pages (nil: nothing).
	Log func(msg string, args ...any)
}

// Server serves the viewer's page and its API.
type Server struct {
	bc    *busclient.Client
	token string
	by    string
	hub   *hub
	mux   *http.ServeMux
	// hosts are the Host headers the viewer answers to (its own
	// address), so no other site's name can be pointed at it.
	hosts  map[string]bool
	cancel context.CancelFunc
	done   chan error
}

// cookieName holds the token once the page has loaded.
const cookieName = "framebus_view"

// maxBody bounds a request's body.
const maxBody = 64 << 10

// New starts a viewer's hub on the bus; Serve it on a listener.
func New(opts Options) (*Server, error) {
	if opts.Client == nil {
		return nil, errors.New("viewer: no bus client")
	}
	if len(opts.Token) < 16 {
		return nil, errors.New("viewer: the token is shorter than 16 characters")
	}
	log := opts.Log
	if log == nil {
		log = func(string, ...any) {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{bc: opts.Client, token: opts.Token, by: cmp.Or(opts.By, "person"), cancel: cancel, done: make(chan error, 1), hosts: map[string]bool{}}
	s.hub = newHub(ctx, opts.Client, log)
	go func() {
		err := s.hub.run(ctx)
		if err != nil && ctx.Err() == nil {
			log("the viewer stopped following the bus", "err", err)
		}
		s.done <- err
	}()
	s.routes()
	return s, nil
}

// Close stops the viewer's hub.
func (s *Server) Close() {
	s.cancel()
	<-s.done
}

// NewToken makes a viewer token.
func NewToken() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Serve serves the viewer on ln until it is closed; the URL to open is
// URL(ln).
func (s *Server) Serve(ln net.Listener) error {
	port := ln.Addr().(*net.TCPAddr).Port
	host, _, _ := net.SplitHostPort(ln.Addr().String())
	for _, h := range []string{host, "localhost", "127.0.0.1", "[::1]"} {
		if strings.Contains(h, ":") && !strings.HasPrefix(h, "[") {
			h = "[" + h + "]"
		}
		s.hosts[h+":"+strconv.Itoa(port)] = true
	}
	hs := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	return hs.Serve(ln)
}

// URL is the address to open, with its token.
func (s *Server) URL(ln net.Listener) string {
	return "http://" + ln.Addr().String() + "/?token=" + s.token
}

// ServeHTTP checks every request: the viewer's own host name, and the
// token (from the URL once, then its cookie).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self'; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	if len(s.hosts) > 0 && !s.hosts[r.Host] {
		http.Error(w, "unknown host", http.StatusMisdirectedRequest)
		return
	}
	if r.URL.Path == "/" && r.URL.Query().Has("token") {
		if !s.tokenOK(r.URL.Query().Get("token")) {
			http.Error(w, "wrong token", http.StatusUnauthorized)
			return
		}
		http.SetCookie(w, &http.Cookie{Name: cookieName, Value: s.token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
		http.Redirect(w, r, "/", http.StatusSeeOther) // the token leaves the address bar
		return
	}
	c, err := r.Cookie(cookieName)
	if err != nil || !s.tokenOK(c.Value) {
		http.Error(w, "open the viewer with the URL framebus view printed (it carries the token)", http.StatusUnauthorized)
		return
	}
	if r.Method == http.MethodPost {
		// A page of another site cannot post here: the cookie is
		// SameSite=Strict, and the origin must be the viewer's own.
		if o := r.Header.Get("Origin"); o != "" && o != "http://"+r.Host {
			http.Error(w, "wrong origin", http.StatusForbidden)
			return
		}
		if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
			http.Error(w, "want application/json", http.StatusUnsupportedMediaType)
			return
		}
	}
	s.mux.ServeHTTP(w, r)
}

func (s *Server) tokenOK(got string) bool {
	return subtle.ConstantTimeCompare([]byte(got), []byte(s.token)) == 1
}

func (s *Server) routes() {
	s.mux = http.NewServeMux()
	static, _ := fs.Sub(assets, "assets")
	s.mux.Handle("GET /", http.FileServerFS(static))
	s.mux.HandleFunc("GET /events", s.events)
	s.mux.HandleFunc("GET /api/frames", s.frames)
	s.mux.HandleFunc("GET /api/frame", s.frame)
	s.mux.HandleFunc("GET /api/screen", s.screen)
	s.mux.HandleFunc("POST /api/watch", s.watch)
	s.mux.HandleFunc("POST /api/control", s.control)
	s.mux.HandleFunc("POST /api/input", s.input)
	s.mux.HandleFunc("POST /api/answer", s.answer)
}

// events is the page's stream (server-sent events): what it needs first,
// then everything as it happens, and the pictures of the tabs it watches.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "no streaming", http.StatusInternalServerError)
		return
	}
	id := NewToken()[:16]
	l, first := s.hub.join(id)
	defer s.hub.leave(l)
	w.Header().Set("Content-Type", "text/event-stream")
	hello, _ := json.Marshal(map[string]string{"conn": id, "by": s.by, "user": s.bc.User()})
	write := func(ev event) bool {
		_, err := fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev.name, ev.data)
		return err == nil
	}
	// A page reconnects half a second after it lost the stream.
	fmt.Fprint(w, "retry: 500\n\n")
	write(event{"hello", hello})
	for _, ev := range first {
		write(ev)
	}
	flusher.Flush()
	beat := time.NewTicker(15 * time.Second)
	defer beat.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-l.dropped:
			return // too far behind: its browser reconnects and catches up
		case ev := <-l.events:
			if !write(ev) {
				return
			}
			for n := len(l.events); n > 0; n-- {
				write(<-l.events)
			}
		case <-l.ready:
			for _, ev := range l.takeScreens() {
				write(ev)
			}
		case <-beat.C:
			fmt.Fprint(w, ": beat\n\n")
		}
		flusher.Flush()
	}
}

// maxFrames is the most frames one api/frames call gives.
const maxFrames = 200

// frames lists a tab's stored frames from..to (metadata and content
// size), for the timeline and for a page catching up.
func (s *Server) frames(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	tab := q.Get("tab")
	from, _ := strconv.ParseInt(q.Get("from"), 10, 64)
	to, _ := strconv.ParseInt(q.Get("to"), 10, 64)
	if !protocol.ValidTabID(tab) || from < 0 || to < 0 {
		s.fail(w, protocol.Errorf(protocol.CodeBadRequest, "want tab, and from and to as frame sequences"))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	if from == 0 && to == 0 {
		// The latest frames.
		cur, err := s.bc.Current(ctx, tab)
		if err != nil {
			s.fail(w, err)
			return
		}
		to = cur.Sequence
	}
	if from == 0 {
		from = max(1, to-maxFrames+1)
	}
	out := []frameView{}
	err := s.bc.Frames(ctx, tab, from, to, func(f busclient.Frame) error {
		out = append(out, viewOf(f.Frame))
		if len(out) >= maxFrames {
			return errEnough
		}
		return nil
	})
	if err != nil && !errors.Is(err, errEnough) {
		s.fail(w, err)
		return
	}
	s.reply(w, map[string]any{"ok": true, "frames": out})
}

var errEnough = errors.New("enough")

// frame is one stored frame with its content, and the change from the
// page's last content before it.
func (s *Server) frame(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	tab := q.Get("tab")
	seq, _ := strconv.ParseInt(q.Get("seq"), 10, 64)
	if !protocol.ValidTabID(tab) || seq < 1 {
		s.fail(w, protocol.Errorf(protocol.CodeBadRequest, "want tab and seq"))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	// The frames before it, back to the last that carried the page whole.
	var frames []busclient.Frame
	err := s.bc.Frames(ctx, tab, max(1, seq-maxFrames), seq, func(f busclient.Frame) error {
		frames = append(frames, f)
		return nil
	})
	if err != nil || len(frames) == 0 || frames[len(frames)-1].Sequence != seq {
		s.fail(w, cmp.Or(err, error(protocol.Errorf(protocol.CodeBadRequest, "frame %d of tab %s is not in the history", seq, tab))))
		return
	}
	f := frames[len(frames)-1]
	out := map[string]any{"ok": true, "frame": f.Frame}
	var before *busclient.Frame
	for i := len(frames) - 2; i >= 0; i-- {
		if p := frames[i]; p.FullPage != nil && p.FullPageFormat == f.FullPageFormat {
			before = &frames[i]
			break
		}
	}
	if f.FullPage != nil && before != nil {
		out["since"] = before.Sequence
		if f.FullPageFormat == "snapshot" {
			if d, ok := snaptext.Diff(*before.FullPage, *f.FullPage); ok {
				out["change"] = d.Text
			}
		}
	}
	s.reply(w, out)
}

// screen is a watched tab's latest picture, a JPEG.
func (s *Server) screen(w http.ResponseWriter, r *http.Request) {
	p, ok := s.hub.picture(r.URL.Query().Get("tab"))
	if !ok {
		http.Error(w, "no picture of that tab: watch it first", http.StatusNotFound)
		return
	}
	w.Header().Set("Content-Type", "image/jpeg")
	w.Header().Set("X-Framebus-Picture", strconv.FormatUint(p.n, 10))
	_, _ = w.Write(p.jpeg)
}

// maxWatched bounds the tabs one page watches.
const maxWatched = 64

// watch sets the tabs a page watches.
func (s *Server) watch(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Conn       string   `json:"conn"`
		Tabs       []string `json:"tabs"`       // at the full rate
		Thumbnails []string `json:"thumbnails"` // at a thumbnail's
	}
	if !s.decode(w, r, &req) {
		return
	}
	l := s.hub.listenerByID(req.Conn)
	if l == nil || len(req.Tabs)+len(req.Thumbnails) > maxWatched {
		s.fail(w, protocol.Errorf(protocol.CodeBadRequest, "conn: not a connected page, or more than %d tabs", maxWatched))
		return
	}
	s.result(w, map[string]any{"ok": true}, s.hub.watch(l, req.Tabs, req.Thumbnails))
}

// control takes a tab over or hands it back, as the viewer's person.
func (s *Server) control(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Tab     string `json:"tab"`
		Op      string `json:"op"`
		Message string `json:"message"`
	}
	if !s.decode(w, r, &req) {
		return
	}
	var reply protocol.ControlReply
	var err error
	switch req.Op {
	case protocol.ControlTakeover:
		reply, err = s.bc.TakeOver(r.Context(), req.Tab, s.by, req.Message)
	case protocol.ControlHandback:
		reply, err = s.bc.HandBack(r.Context(), req.Tab, s.by)
	default:
		err = protocol.Errorf(protocol.CodeBadRequest, "op: %q is not takeover or handback", req.Op)
	}
	s.result(w, reply, err)
}

// input forwards a person's input to the tab they control.
func (s *Server) input(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Tab string `json:"tab"`
		protocol.InputRequest
	}
	if !s.decode(w, r, &req) {
		return
	}
	req.By = s.by
	reply, err := s.bc.Input(r.Context(), req.Tab, req.InputRequest)
	s.result(w, reply, err)
}

// answer answers a tab's question.
func (s *Server) answer(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Tab    string `json:"tab"`
		ID     string `json:"id"`
		Answer string `json:"answer"`
	}
	if !s.decode(w, r, &req) {
		return
	}
	err := s.bc.Answer(r.Context(), req.Tab, protocol.AnswerRequest{ID: req.ID, Answer: req.Answer, By: s.by})
	s.result(w, map[string]any{"ok": true}, err)
}

func (s *Server) decode(w http.ResponseWriter, r *http.Request, v any) bool {
	data, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err == nil && len(data) > maxBody {
		err = errors.New("body too large")
	}
	if err == nil {
		err = json.Unmarshal(data, v)
	}
	if err != nil {
		s.fail(w, protocol.Errorf(protocol.CodeBadRequest, "request: %v", err))
		return false
	}
	return true
}

// result answers v, or err when there is one.
func (s *Server) result(w http.ResponseWriter, v any, err error) {
	if err != nil {
		s.fail(w, err)
		return
	}
	s.reply(w, v)
}

func (s *Server) reply(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// fail answers an error as the bus does: ok false, its message and code.
func (s *Server) fail(w http.ResponseWriter, err error) {
	w.Header().Set("Content-Type", "application/json")
	status := http.StatusBadGateway
	switch protocol.CodeOf(err) {
	case protocol.CodeBadRequest:
		status = http.StatusBadRequest
	case protocol.CodePermissionDenied:
		status = http.StatusForbidden
	}
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(protocol.NewErrorReply(err))
}
