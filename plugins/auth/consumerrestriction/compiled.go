package consumerrestriction

import (
	"github.com/moeproxy/moe/plugins/auth/internal/authn"
	"github.com/moeproxy/moe/shared/api"
)

// compiled is what a config version builds once: the rules and the default
// (Validate, where compiling is the check), the replies and the counters
// (Init).
type compiled struct {
	rules        []rule
	defaultAllow bool
	denied       *authn.Reply
	unauth       *authn.Reply
	badPath      *authn.Reply
	stats        *authn.Stats
}

// Init builds the replies and counters once per config version.
func (c *Config) Init(env api.ConfigEnv) error {
	c.denied = authn.NewReply(c.Status, "", c.Message)
	c.unauth = authn.NewReply(c.UnauthenticatedStatus, "", c.UnauthenticatedMessage)
	c.badPath = authn.NewReply(400, "", "Bad request path")
	c.stats = authn.NewStats(env.Metrics(), reasonNoConsumer, reasonRule, reasonDefault, reasonBadPath)
	return nil
}
