package cdpdriver

import (
	"encoding/json"
	"reflect"
	"testing"
)

// The events that tell who caused a navigation, decoded from what
// Chromium 156 sent in a headed browser (trimmed): a person's click on a
// link, then a timer's script navigating.
func TestDecodeWhoNavigated(t *testing.T) {
	d := &eventDecoder{mainFrameID: "F", net: newNetTracker()}
	for _, tc := range []struct {
		method, params string
		want           Event // nil: none
	}{
		{"Page.frameRequestedNavigation", `{"frameId":"F","reason":"anchorClick","url":"http://h/b.html","disposition":"currentTab"}`,
			NavigationRequested{FrameID: "F", URL: "http://h/b.html", Reason: "anchorClick", Main: true, ByDocument: true}},
		{"Page.frameStartedNavigating", `{"frameId":"F","url":"http://h/b.html","loaderId":"L2","navigationType":"differentDocument"}`,
			NavigationRequested{FrameID: "F", URL: "http://h/b.html", Reason: "differentDocument", LoaderID: "L2", Main: true, Type: "differentDocument"}},
		{"Network.requestWillBeSent", `{"requestId":"L2","loaderId":"L2","frameId":"F","type":"Document","hasUserGesture":true,"initiator":{"type":"other"},"request":{"url":"http://h/b.html"}}`,
			DocumentRequested{FrameID: "F", LoaderID: "L2", Main: true, UserGesture: true}},
		// Its redirect is the same request: no second DocumentRequested.
		{"Network.requestWillBeSent", `{"requestId":"L2","loaderId":"L2","frameId":"F","type":"Document","hasUserGesture":false,"redirectResponse":{"status":302},"request":{"url":"http://h/c.html"}}`,
			nil},
		{"Network.requestWillBeSent", `{"requestId":"R9","loaderId":"L2","frameId":"F","type":"Script","hasUserGesture":false,"request":{"url":"http://h/a.js"}}`,
			nil},
		{"Network.requestWillBeSent", `{"requestId":"L3","loaderId":"L3","frameId":"F","type":"Document","hasUserGesture":false,"initiator":{"type":"script"},"request":{"url":"http://h/c.html"}}`,
			DocumentRequested{FrameID: "F", LoaderID: "L3", Main: true}},
	} {
		got, ok := d.decode(tc.method, json.RawMessage(tc.params))
		if !ok {
			got = nil
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s %s:\n got %#v\nwant %#v", tc.method, tc.params, got, tc.want)
		}
	}
}
