package webfetch

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
	"unsafe"

	"golang.org/x/net/html"
	"golang.org/x/net/html/charset"
	"golang.org/x/text/encoding"

	"github.com/framebus/framebus/protocol"
)

// answer reads resp's body within the cap and makes the reply (all but
// the URL and the hops, which follow knows, and the Body) and the body
// apart: the text in UTF-8, or, with Encoding base64, the bytes received.
func (f *Fetcher) answer(p prepared, method string, resp *http.Response, addr string) (protocol.FetchReply, []byte, error) {
	r := protocol.FetchReply{
		Status:     resp.StatusCode,
		StatusText: strings.TrimSpace(strings.TrimPrefix(resp.Status, strconv.Itoa(resp.StatusCode))),
		Headers:    resp.Header, // the transport has them canonical
		Address:    addr,
		Encoding:   "text",
	}
	if r.StatusText == "" {
		r.StatusText = http.StatusText(resp.StatusCode)
	}
	if method == http.MethodHead {
		return r, nil, nil
	}
	data, truncated, err := readCapped(resp.Body, resp.ContentLength, p.maxBytes, p.buffer)
	if err != nil {
		return r, nil, fmt.Errorf("reading the body (%d bytes in): %w", len(data), err)
	}
	r.Truncated = truncated
	r.Bytes = int64(len(data))
	if truncated && resp.ContentLength > r.Bytes {
		r.Bytes = resp.ContentLength
	}
	contentType := resp.Header.Get("Content-Type")
	text, name, ok := decodeText(data, contentType, truncated)
	if !ok {
		r.Encoding = "base64"
		return r, data, nil
	}
	r.Charset = name
	if p.readable && isHTML(contentType, data) {
		r.Readable = readable(noCopyString(text), resp.Request.URL)
	}
	return r, text, nil
}

// readCapped reads body up to max bytes and one more to know whether
// there is more: the rest is never read (the caller closes the body, and
// with it the connection). It reads into *into when given (grown as
// needed, and kept there grown), else into a buffer of the body's
// size: a declared length sizes it at once; without one (a chunked
// answer) the body is read in reused blocks and copied once into it.
// One buffer grown by doubling allocated 2.3 times a 100 KB page and
// copied it 1.2 times more, and what a fetch allocates is what the
// node's garbage collector runs for.
func readCapped(body io.Reader, declared int64, max int, into *[]byte) ([]byte, bool, error) {
	size := -1
	if declared >= 0 {
		size = int(min(declared, int64(max))) + 1
	}
	switch {
	case into != nil:
		buf := (*into)[:0]
		if size > cap(buf) {
			buf = make([]byte, 0, size)
		}
		data, truncated, err := readGrowing(body, buf, max)
		*into = data[:0]
		return data, truncated, err
	case size >= 0:
		return readGrowing(body, make([]byte, 0, size), max)
	}
	return readBlocks(body, max)
}

// readGrowing is readCapped into buf, grown when full.
func readGrowing(body io.Reader, buf []byte, max int) ([]byte, bool, error) {
	for len(buf) <= max {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, min(cmp.Or(cap(buf), readBlock), max+1-len(buf)))
		}
		n, err := body.Read(buf[len(buf):min(cap(buf), max+1)])
		buf = buf[:len(buf)+n]
		if err != nil && len(buf) <= max { // the last bytes may come with io.EOF, and pass the cap
			if err == io.EOF {
				err = nil
			}
			return buf, false, err
		}
	}
	return buf[:max], true, nil
}

// readBlock is the unit readBlocks reads a body of unknown length in.
const readBlock = 32 << 10

var blockPool = sync.Pool{New: func() any { return new([readBlock]byte) }}

// readBlocks is readCapped for a body of unknown length.
func readBlocks(body io.Reader, max int) ([]byte, bool, error) {
	var blocks []*[readBlock]byte
	defer func() {
		for _, b := range blocks {
			blockPool.Put(b)
		}
	}()
	n := 0 // bytes read: blocks[n/readBlock] is filled up to n%readBlock
	var err error
	for n <= max && err == nil {
		at := n % readBlock
		if at == 0 {
			blocks = append(blocks, blockPool.Get().(*[readBlock]byte))
		}
		var m int
		m, err = body.Read(blocks[len(blocks)-1][at:min(readBlock, at+max+1-n)])
		n += m
	}
	data := make([]byte, min(n, max))
	for i, b := range blocks {
		copy(data[i*readBlock:], b[:])
	}
	switch {
	case n > max:
		return data, true, nil
	case err == io.EOF:
		return data, false, nil
	}
	return data, false, err
}

// decodeText decodes data as text in its declared charset (a byte order
// mark, the Content-Type charset, an HTML page's meta charset) or, with
// none declared, as UTF-8 when the type is textual. ok is false when the
// bytes are not text in that charset: they go out as base64.
func decodeText(data []byte, contentType string, truncated bool) (text []byte, name string, ok bool) {
	if len(data) == 0 {
		return data, "", true
	}
	enc, name, certain := charset.DetermineEncoding(data, contentType) // certain: a BOM or the Content-Type's charset
	if !certain {
		enc, name = nil, ""
		if isHTML(contentType, data) {
			enc, name = metaCharset(data)
		}
	}
	if enc == nil {
		if !isTextual(contentType, data) {
			return nil, "", false
		}
		name = "utf-8"
	}
	if truncated {
		data = trimPartialRune(data, name)
	}
	if name == "utf-8" {
		data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
		return data, name, utf8.Valid(data)
	}
	if name == "replacement" { // labels browsers refuse to decode (ISO-2022-KR, ...)
		return nil, "", false
	}
	out, err := enc.NewDecoder().Bytes(data)
	if err != nil || bytes.ContainsRune(out, utf8.RuneError) {
		// A legacy charset cannot hold U+FFFD: it is the decoder's mark
		// for bytes that are not text in that charset.
		return nil, "", false
	}
	return out, name, true
}

// metaCharset is the charset an HTML page's head declares in its first
// 1024 bytes (<meta charset> or <meta http-equiv=Content-Type>), as
// browsers look for it; a UTF-16 label there means UTF-8 (the page was
// read as ASCII to find it).
func metaCharset(data []byte) (encoding.Encoding, string) {
	if len(data) > 1024 {
		data = data[:1024]
	}
	z := html.NewTokenizer(bytes.NewReader(data))
	for {
		switch z.Next() {
		case html.ErrorToken:
			return nil, ""
		case html.StartTagToken, html.SelfClosingTagToken:
			tag, hasAttr := z.TagName()
			if string(tag) != "meta" || !hasAttr {
				continue
			}
			var label, content string
			httpEquiv := false
			for hasAttr {
				var k, v []byte
				k, v, hasAttr = z.TagAttr()
				switch strings.ToLower(string(k)) {
				case "charset":
					label = string(v)
				case "http-equiv":
					httpEquiv = strings.EqualFold(string(v), "content-type")
				case "content":
					content = string(v)
				}
			}
			if label == "" && httpEquiv {
				if _, params, err := mime.ParseMediaType(content); err == nil {
					label = params["charset"]
				}
			}
			if label == "" {
				continue
			}
			enc, name := charset.Lookup(label)
			if strings.HasPrefix(name, "utf-16") {
				enc, name = charset.Lookup("utf-8")
			}
			if enc != nil {
				return enc, name
			}
		}
	}
}

// noCopyString is b as a string without copying it (a 100 KB page is
// 20 µs of a fetch's 400): b is the body read for this one reply, and
// nothing writes to it after.
func noCopyString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// trimPartialRune drops the start of a UTF-8 character the cap cut in
// two.
func trimPartialRune(data []byte, name string) []byte {
	if name != "utf-8" {
		return data
	}
	for i := len(data) - 1; i >= 0 && i >= len(data)-utf8.UTFMax; i-- {
		if utf8.RuneStart(data[i]) {
			if !utf8.FullRune(data[i:]) {
				return data[:i]
			}
			break
		}
	}
	return data
}

// isHTML says whether a body is an HTML page: by its type, or, with none,
// by what it starts with.
func isHTML(contentType string, data []byte) bool {
	mt := mediaType(contentType)
	if mt == "" {
		mt = mediaType(http.DetectContentType(data))
	}
	return mt == "text/html" || mt == "application/xhtml+xml"
}

// isTextual says whether a body without a declared charset is meant as
// text: a text/ type, JSON, XML, JavaScript, a form; with no type, what
// the bytes look like.
func isTextual(contentType string, data []byte) bool {
	mt := mediaType(contentType)
	if mt == "" {
		mt = mediaType(http.DetectContentType(data))
	}
	switch {
	case strings.HasPrefix(mt, "text/"), strings.HasSuffix(mt, "+json"), strings.HasSuffix(mt, "+xml"):
		return true
	}
	switch mt {
	case "application/json", "application/xml", "application/javascript", "application/ecmascript",
		"application/x-www-form-urlencoded", "application/x-ndjson", "application/yaml", "application/toml":
		return true
	}
	return false
}

func mediaType(contentType string) string {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return strings.ToLower(strings.TrimSpace(strings.Split(contentType, ";")[0]))
	}
	return mt
}
