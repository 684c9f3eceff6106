// Package frames keeps a tab's frame sequence: the numbered page states a
// tab publishes, the rule that decides whether a planned action is still
// current, a short history, and the full-page policy (when a frame carries
// the page's content and in which format).
//
// It holds no goroutines and talks to neither CDP nor NATS: the tab actor
// owns one Stream and calls it from its single goroutine.
//
//	s := frames.New("tab1", frames.Options{})
//	first := s.Append(frames.Change{URL: "about:blank", Action: protocol.FrameOpen, Source: protocol.SourceBrowser}, nil)
//	if err := s.Check(action.BasedOnSequence); err != nil { /* stale_frame */ }
//	c := frames.Change{URL: newURL, Action: "navigate", Source: protocol.SourceAgent, NewDocument: true}
//	if s.WantsContent(c) { content = capture(s.Format()) }
//	f := s.Append(c, content)
package frames
