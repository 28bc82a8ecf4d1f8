//go:build !unix

package logsink

// canWrite cannot ask without opening here: Acquire finds out when the config
// is loaded for real.
func canWrite(op, name, target string) error { return nil }
