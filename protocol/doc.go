// Package protocol holds the framebus wire format: frames, actions, plans,
// plan results, error codes and subject names.
//
// It is the only package every other framebus package (and every third-party
// client) needs, so it imports nothing else from the project.
//
// An agent sends a Plan to a tab's plan subject and gets a PlanResult back:
//
//	seq := int64(1)
//	plan := protocol.Plan{Actions: []protocol.Action{
//		{Type: "navigate", URL: "http://127.0.0.1:8080/search", BasedOnSequence: &seq},
//	}}
//	data, _ := json.Marshal(plan)
//	msg, err := nc.Request(protocol.DefaultSubjects.TabPlan(tab), data, 30*time.Second)
//	res, err := protocol.DecodePlanResult(msg.Data)
//
// Observers subscribe to protocol.DefaultSubjects.TabFrames(tab) (or
// AllFrames()) and decode each message with DecodeFrame.
//
// Plans are validated with DecodePlan, which names the offending field in a
// bad_request error. Every error that crosses the wire is an *Error with a
// stable Code from codes.go.
package protocol
