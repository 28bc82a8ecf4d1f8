package api

// Status is what a receiver or sender filter returns, with MOSN's meaning.
type Status int

const (
	// Continue hands the request (or response) to the next plugin of the phase.
	Continue Status = iota
	// Stop ends the phase: the remaining plugins of this direction are skipped.
	// Return it only after replying (SendHijackReply, SendHijackReplyWithBody,
	// SendDirectResponse). Stop without a reply is a plugin bug; the framework
	// answers 500 and names the plugin, because leaving the stream paused would hang
	// the client.
	Stop
)

func (s Status) String() string {
	switch s {
	case Continue:
		return "Continue"
	case Stop:
		return "Stop"
	}
	return "Status(?)"
}
