package api

import "time"

// Decision is what a plugin decided about a request, for audit logs, debug
// output and traces. The framework records one for every local reply (the
// plugin refused the request) and for every consumer an auth plugin
// identified; plugins add their own with Context.Decide. Decisions are only
// kept when a plugin of the chain reads them (Needs.Observe); otherwise
// recording costs nothing.
type Decision struct {
	Plugin string
	// Allowed is false when the plugin refused the request.
	Allowed bool
	// Reason is short and free of secrets: "consumer alice", "invalid API
	// key", "rate limited".
	Reason string
	// Status is the reply's status when the plugin refused the request.
	Status int
}

// PluginCall is one call of a plugin's hook, recorded when a plugin turned on
// call tracing for the request (Context.TraceCalls).
type PluginCall struct {
	Plugin string
	// Hook is OnReceive, Append, OnReceiveData or AppendData.
	Hook     string
	Start    time.Time
	Duration time.Duration
	Status   Status
}
