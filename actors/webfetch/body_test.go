package webfetch

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"testing"
	"testing/iotest"
)

// TestReadCapped reads bodies around the block size and the cap, with
// and without a declared length, in reads of every size a connection
// gives, into a buffer of their own or into one reused body after body
// (FetchBytes): each keeps exactly the body's first max bytes, says
// truncated exactly when there was more, and passes a read error on
// with what came before it.
func TestReadCapped(t *testing.T) {
	body := make([]byte, 3*readBlock+7)
	for i := range body {
		body[i] = byte(i*7 + i/251)
	}
	readers := map[string]func(io.Reader) io.Reader{
		"whole":    func(r io.Reader) io.Reader { return r },
		"half":     iotest.HalfReader,
		"one byte": func(r io.Reader) io.Reader { return iotest.OneByteReader(io.LimitReader(r, readBlock+3)) },
		"data+EOF": iotest.DataErrReader,
	}
	var reused []byte
	sizes := []int{0, 1, readBlock - 1, readBlock, readBlock + 1, 2 * readBlock, len(body)}
	for name, wrap := range readers {
		for _, size := range sizes {
			for _, max := range []int{1, readBlock - 1, readBlock, readBlock + 1, 2*readBlock + 5, len(body) + 1} {
				for _, declared := range []int64{-1, int64(size)} {
					for _, into := range []*[]byte{nil, &reused} {
						src := body[:size]
						if name == "one byte" {
							src = body[:min(size, readBlock+3)]
							if declared >= 0 {
								declared = int64(len(src))
							}
						}
						t.Run(fmt.Sprintf("%s/%d/max%d/declared%d/reused%v", name, size, max, declared, into != nil), func(t *testing.T) {
							got, truncated, err := readCapped(wrap(bytes.NewReader(src)), declared, max, into)
							want := src[:min(len(src), max)]
							if err != nil || !bytes.Equal(got, want) || truncated != (len(src) > max) {
								t.Errorf("%d bytes (want %d, equal %v), truncated %v, err %v", len(got), len(want), bytes.Equal(got, want), truncated, err)
							}
							if into != nil && len(got) > 0 && &(*into)[:1][0] != &got[0] {
								t.Errorf("the body was not read into the buffer given (or the buffer grown is not kept there)")
							}
						})
					}
				}
			}
		}
	}
	broken := errors.New("connection reset")
	for _, declared := range []int64{-1, int64(len(body))} {
		for _, into := range []*[]byte{nil, &reused} {
			got, truncated, err := readCapped(io.MultiReader(bytes.NewReader(body[:readBlock+10]), iotest.ErrReader(broken)), declared, len(body), into)
			if !errors.Is(err, broken) || truncated || !bytes.Equal(got, body[:readBlock+10]) {
				t.Errorf("declared %d, reused %v, a read error after %d bytes: %d bytes, truncated %v, err %v", declared, into != nil, readBlock+10, len(got), truncated, err)
			}
		}
	}
}
