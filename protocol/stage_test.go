package protocol

import (
	"strings"
	"testing"
)

// upload takes node paths or staged ids, one or the other; an id is never
// a path.
func TestUploadParams(t *testing.T) {
	id := strings.Repeat("ab", 16)
	for _, body := range []string{
		`{"action":{"type":"upload","selector":"#f","files":["/srv/a"]}}`,
		`{"action":{"type":"upload","selector":"#f","staged":["` + id + `"]}}`,
	} {
		if _, err := DecodePlan([]byte(body)); err != nil {
			t.Errorf("%s: %v", body, err)
		}
	}
	for body, says := range map[string]string{
		`{"action":{"type":"upload","selector":"#f"}}`:                                          "upload.files: missing",
		`{"action":{"type":"upload","selector":"#f","files":["/a"],"staged":["` + id + `"]}}`:   "not both",
		`{"action":{"type":"upload","selector":"#f","staged":["../../etc/passwd"]}}`:            `upload.staged[0]: "../../etc/passwd" is not a staged file's id`,
		`{"action":{"type":"upload","selector":"#f","staged":["` + strings.ToUpper(id) + `"]}}`: "is not a staged file's id",
		`{"action":{"type":"upload","selector":"#f","staged":["` + id + `/../../x"]}}`:          "is not a staged file's id",
		`{"action":{"type":"upload","selector":"#f","files":["/a"],"onNode":true}}`:             `does not take "onNode"`,
	} {
		_, err := DecodePlan([]byte(body))
		if CodeOf(err) != CodeBadRequest || !strings.Contains(err.Error(), says) {
			t.Errorf("%s: %v, want bad_request saying %q", body, err, says)
		}
	}
}
