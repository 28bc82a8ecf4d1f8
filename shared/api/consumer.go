package api

// Consumer is the authenticated caller, set by an auth plugin with
// ctx.SetConsumer and read by later plugins (limits per consumer, ACLs, logs,
// the $consumer variable). Consumers are defined in plugin config and indexed at
// parse time (see shared/consumer); treat a *Consumer as immutable.
type Consumer struct {
	Name       string            `json:"name"`
	Group      string            `json:"group,omitempty"`
	Attributes map[string]string `json:"attributes,omitempty"`
}
