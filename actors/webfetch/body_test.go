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
// gives: each keeps exactly the body's first max bytes, says truncated
// exactly when there was more, and passes a read error on with what came
// before it.
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
	sizes := []int{0, 1, readBlock - 1, readBlock, readBlock + 1, 2 * readBlock, len(body)}
	for name, wrap := range readers {
		for _, size := range sizes {
			for _, max := range []int{1, readBlock - 1, readBlock, readBlock + 1, 2*readBlock + 5, len(body) + 1} {
				for _, declared := range []int64{-1, int64(size)} {
					src := body[:size]
					if name == "one byte" {
						src = body[:min(size, readBlock+3)]
						if declared >= 0 {
							declared = int64(len(src))
						}
					}
					t.Run(fmt.Sprintf("%s/%d/max%d/declared%d", name, size, max, declared), func(t *testing.T) {
						got, truncated, err := readCapped(wrap(bytes.NewReader(src)), declared, max)
						want := src[:min(len(src), max)]
						if err != nil || !bytes.Equal(got, want) || truncated != (len(src) > max) {
							t.Errorf("%d bytes (want %d, equal %v), truncated %v, err %v", len(got), len(want), bytes.Equal(got, want), truncated, err)
						}
					})
				}
			}
		}
	}
	broken := errors.New("connection reset")
	for _, declared := range []int64{-1, int64(len(body))} {
		got, truncated, err := readCapped(io.MultiReader(bytes.NewReader(body[:readBlock+10]), iotest.ErrReader(broken)), declared, len(body))
		if !errors.Is(err, broken) || truncated || !bytes.Equal(got, body[:readBlock+10]) {
			t.Errorf("declared %d, a read error after %d bytes: %d bytes, truncated %v, err %v", declared, readBlock+10, len(got), truncated, err)
		}
	}
}
