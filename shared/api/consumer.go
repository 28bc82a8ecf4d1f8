package api

// Consumer is the authenticated caller, set by an auth plugin with
// ctx.SetConsumer and read by later plugins (limits per consumer, ACLs, logs,
// the $consumer variable). Consumers are defined in config, either once for the
// whole chain (the moe config's `consumers:` list) or in an auth plugin's own
// list, and indexed at parse time (see shared/consumer); treat a *Consumer as
// immutable.
type Consumer struct {
	Name       string            `json:"name"`
	Group      string            `json:"group,omitempty"`
	Attributes map[string]string `json:"attributes,omitempty"`
}

// ConsumerCredential is a chain-level consumer with its credential for one
// plugin (ConfigEnv.Consumers).
type ConsumerCredential struct {
	Consumer *Consumer
	// Credential is what the plugin registered as its credential type
	// (registry.Plugin.NewCredential), decoded strictly and validated.
	Credential any
	// Field is its config path, e.g. "consumers[2].auth.key-auth", for errors.
	Field string
}
