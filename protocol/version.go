package protocol

// Version is the protocol version this package speaks. Frames and results
// carry it; a plan may state the version it was written for, and a plan for
// a newer version than the node's is refused with bad_request.
const Version = 1
