package variables_test

import "github.com/moeproxy/moe/shared/config"

func jsonDecode(raw string, dst any) error { return config.DecodeStrict([]byte(raw), dst) }
