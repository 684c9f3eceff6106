package webfetch

import (
	"bytes"
	"encoding/base64"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/framebus/framebus/protocol"
)

// testdata serves ../../testdata/fetch with the Content-Type each file is
// to be sent with: the ISO-8859-1 page declares its charset in the
// header, the Shift_JIS page only in its meta tag.
func testdataServer(t *testing.T) string {
	t.Helper()
	types := map[string]string{
		"/latin1.html":    "text/html; charset=ISO-8859-1",
		"/shift_jis.html": "text/html",
		"/article.html":   "text/html; charset=utf-8",
	}
	srv := serveOn(t, allowedAddr, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/utf8.json":
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"name":"Zoë","city":"Zürich"}`))
			return
		case "/no-type":
			w.Header()["Content-Type"] = nil // sent with none: what the bytes look like decides
			w.Write([]byte("plain words, ünïcödé"))
			return
		case "/image.png":
			w.Header().Set("Content-Type", "image/png")
			w.Write([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe"))
			return
		case "/archive.zip": // bytes that happen to be valid UTF-8, of a binary type
			w.Header().Set("Content-Type", "application/zip")
			w.Write([]byte("PK\x03\x04\x14\x00\x00\x00\x08\x00"))
			return
		case "/lying.txt": // says UTF-8, is not
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.Write([]byte("caf\xe9"))
			return
		case "/bad-sjis.txt": // says Shift_JIS, holds bytes that are not
			w.Header().Set("Content-Type", "text/plain; charset=Shift_JIS")
			w.Write([]byte("ok \x82\xa0 then \xff\xfd\xfe"))
			return
		}
		data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "fetch", r.URL.Path))
		if err != nil {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", types[r.URL.Path])
		w.Write(data)
	}))
	return srv.URL
}

// Bodies are text in their declared charset: ISO-8859-1 from the
// Content-Type (read as windows-1252, as browsers do), Shift_JIS from the
// meta tag; UTF-8 JSON and an untyped text with no charset are UTF-8;
// bytes that are not text in their charset (or have no charset and are
// not UTF-8, or are an image) are base64, byte for byte.
func TestCharsets(t *testing.T) {
	base := testdataServer(t)
	f := newFetcher(t, Options{})
	for _, c := range []struct {
		path, charset string
		holds         []string
	}{
		{"/latin1.html", "windows-1252", []string{"<title>Café crème</title>", "à la française coûte 3\u00a0£, ¿sí? © Æsop"}},
		{"/shift_jis.html", "shift_jis", []string{"<title>日本語のページ</title>", "こんにちは、世界。カタカナと漢字。ﾊﾝｶｸ"}},
		{"/utf8.json", "utf-8", []string{`{"name":"Zoë","city":"Zürich"}`}},
		{"/no-type", "utf-8", []string{"plain words, ünïcödé"}},
	} {
		r := mustFetch(t, f, protocol.FetchRequest{URL: base + c.path})
		if r.Encoding != "text" || r.Charset != c.charset {
			t.Errorf("%s: encoding %q charset %q, want text in %s", c.path, r.Encoding, r.Charset, c.charset)
			continue
		}
		for _, h := range c.holds {
			if !strings.Contains(r.Body, h) {
				t.Errorf("%s: body does not hold %q:\n%s", c.path, h, r.Body)
			}
		}
	}
	for _, c := range []struct{ path, want string }{
		{"/image.png", "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe"},
		{"/archive.zip", "PK\x03\x04\x14\x00\x00\x00\x08\x00"},
		{"/lying.txt", "caf\xe9"},
		{"/bad-sjis.txt", "ok \x82\xa0 then \xff\xfd\xfe"},
	} {
		r := mustFetch(t, f, protocol.FetchRequest{URL: base + c.path})
		got, err := base64.StdEncoding.DecodeString(r.Body)
		if r.Encoding != "base64" || err != nil || !bytes.Equal(got, []byte(c.want)) {
			t.Errorf("%s: encoding %q body %q, want base64 of the bytes", c.path, r.Encoding, r.Body)
		}
	}
}

// A cap that cuts a UTF-8 character in two leaves a text body, without
// the half character.
func TestCapInsideACharacter(t *testing.T) {
	srv := serveOn(t, allowedAddr, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write([]byte("ab€€€")) // € is 3 bytes
	}))
	f := newFetcher(t, Options{})
	r := mustFetch(t, f, protocol.FetchRequest{URL: srv.URL, MaxBytes: 4})
	if r.Encoding != "text" || r.Body != "ab" || !r.Truncated {
		t.Fatalf("encoding %q body %q truncated %v, want text \"ab\", truncated", r.Encoding, r.Body, r.Truncated)
	}
}

// readable gives an article page's main text (title, byline, excerpt)
// without its navigation, ads, sidebar and footer; a body that is not
// HTML gets no Readable and no error.
func TestReadable(t *testing.T) {
	base := testdataServer(t)
	f := newFetcher(t, Options{})
	r := mustFetch(t, f, protocol.FetchRequest{URL: base + "/article.html", Readable: true})
	rd := r.Readable
	if rd == nil {
		t.Fatal("no readable")
	}
	if !strings.Contains(rd.Title, "How the Harbour Lighthouse Was Restored") || rd.Byline != "Maren Holt" ||
		!strings.Contains(rd.Excerpt, "forty years in the dark") {
		t.Errorf("title %q byline %q excerpt %q", rd.Title, rd.Byline, rd.Excerpt)
	}
	for _, want := range []string{"For forty years the lighthouse", "red lead paint", "still watching the water."} {
		if !strings.Contains(rd.Text, want) {
			t.Errorf("text lacks %q:\n%s", want, rd.Text)
		}
	}
	for _, clutter := range []string{"SALE ENDS SUNDAY", "Most read", "Council approves", "Privacy", "Subscribe"} {
		if strings.Contains(rd.Text, clutter) {
			t.Errorf("text holds the page's clutter %q:\n%s", clutter, rd.Text)
		}
	}
	if !strings.Contains(r.Body, "SALE ENDS SUNDAY") {
		t.Errorf("the body is not the whole page")
	}
	// A legacy charset is decoded before extraction.
	r = mustFetch(t, f, protocol.FetchRequest{URL: base + "/latin1.html", Readable: true})
	if r.Readable == nil || r.Readable.Title != "Café crème" {
		t.Errorf("latin1 readable: %+v", r.Readable)
	}
	// Not HTML: no readable, no error.
	r = mustFetch(t, f, protocol.FetchRequest{URL: base + "/utf8.json", Readable: true})
	if r.Readable != nil {
		t.Errorf("JSON got a readable: %+v", r.Readable)
	}
	// Without readable, none.
	r = mustFetch(t, f, protocol.FetchRequest{URL: base + "/article.html"})
	if r.Readable != nil {
		t.Errorf("readable unasked: %+v", r.Readable)
	}
}
