package conformance

import (
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moeproxy/moe/shared/testing/hosttest"
)

// The command line as Envoy's (source/server/options_impl.cc, TCLAP): --version, --help, parse
// errors, --mode validate / init_only, --admin-address-path.

func readTemplate(t *testing.T, name string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", name+".yaml.tmpl"))
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

func cliOptions(args ...string) hosttest.Options {
	return hosttest.Options{Library: "libconformance.so", Listeners: []string{"main"}, Args: args, StartTimeout: 30 * time.Second}
}

// TestCLIVersion: `envoy --version` prints TCLAP's version line, "\n<argv0>  version: <revision>/
// <version>/<Clean|Modified>/<build type>/<SSL>\n\n", and exits 0.
func TestCLIVersion(t *testing.T) {
	findBinaries(t)
	r := hosttest.Run(t, readTemplate(t, "logstart"), hosttest.Vars{"A1": freePort(t)}, cliOptions("--version"))
	re := regexp.MustCompile(`^\n\S*moe-host(-asan)?  version: ([0-9a-f]{40}|unknown)/1\.39\.0/(Clean|Modified)/RELEASE/moe-host\n\n$`)
	if r.ExitCode != 0 || !re.MatchString(r.Stdout) {
		t.Fatalf("--version: exit %d, stdout %q (want %s)", r.ExitCode, r.Stdout, re)
	}
}

// TestCLIHelp: --help prints TCLAP's usage (USAGE, Where, one entry per flag) and exits 0.
func TestCLIHelp(t *testing.T) {
	findBinaries(t)
	r := hosttest.Run(t, readTemplate(t, "logstart"), hosttest.Vars{"A1": freePort(t)}, cliOptions("--help"))
	if r.ExitCode != 0 {
		t.Fatalf("--help: exit %d", r.ExitCode)
	}
	for _, want := range []string{"\nUSAGE: \n\n", "\n\nWhere: \n\n", "   -c <string>,  --config-path <string>\n     Path to configuration file\n",
		"   --mode <string>\n     One of 'serve' (default; validate configs and then serve traffic\n",
		"   -l <string>,  --log-level <string>\n", "   --version\n     Displays version information and exits.\n",
		"   -h,  --help\n     Displays usage information and exits.\n"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("--help lacks %q:\n%s", want, r.Stdout)
		}
	}
}

// TestCLIParseError: an unknown flag is TCLAP's PARSE ERROR with the brief usage, exit 1; a
// value Envoy refuses after parsing (an unknown mode) is its "error: ..." line, exit 1.
func TestCLIParseError(t *testing.T) {
	findBinaries(t)
	tmpl := readTemplate(t, "logstart")
	r := hosttest.Run(t, tmpl, hosttest.Vars{"A1": freePort(t)}, cliOptions("--no-such-flag"))
	if r.ExitCode != 1 || !strings.Contains(r.Stderr, "PARSE ERROR: Argument: --no-such-flag\n             Couldn't find match for argument\n") ||
		!strings.Contains(r.Stderr, "For complete USAGE and HELP type: \n") {
		t.Errorf("unknown flag: exit %d, stderr:\n%s", r.ExitCode, r.Stderr)
	}
	r = hosttest.Run(t, tmpl, hosttest.Vars{"A1": freePort(t)}, cliOptions("--mode", "bogus"))
	if r.ExitCode != 1 || !strings.Contains(r.Stderr, "error: unknown mode 'bogus'") {
		t.Errorf("--mode bogus: exit %d, stderr:\n%s", r.ExitCode, r.Stderr)
	}
	r = hosttest.Run(t, tmpl, hosttest.Vars{"A1": freePort(t)}, cliOptions("--concurrency", "x"))
	if r.ExitCode != 1 || !strings.Contains(r.Stderr, "PARSE ERROR: Argument: --concurrency") {
		t.Errorf("--concurrency x: exit %d, stderr:\n%s", r.ExitCode, r.Stderr)
	}
}

// TestCLIModeValidate: --mode validate checks the whole config (moectl's refusals, the plugins'
// own Parse) without serving: "configuration '<path>' OK" and exit 0, or the error and exit 1
// (config_validation/server.cc validateConfig). Nothing listens meanwhile.
func TestCLIModeValidate(t *testing.T) {
	findBinaries(t)
	port := freePort(t)
	r := hosttest.Run(t, strings.ReplaceAll(readTemplate(t, "logstart"), "{{.Ports.main}}", strconv.Itoa(port)),
		hosttest.Vars{"A1": freePort(t)}, hosttest.Options{Library: "libconformance.so", Args: []string{"--mode", "validate"}})
	if r.ExitCode != 0 || r.Stdout != "configuration '"+r.ConfigPath+"' OK\n" {
		t.Fatalf("validate: exit %d, stdout %q, stderr:\n%s", r.ExitCode, r.Stdout, r.Stderr)
	}
	if c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second); err == nil {
		c.Close()
		t.Errorf("validate bound the listener port")
	}

	// A plugin config the plugin's Parse rejects.
	r = hosttest.Run(t, readTemplate(t, "rejected"), hosttest.Vars{"A1": freePort(t)},
		hosttest.Options{Library: "libconformance.so", Listeners: []string{"main"}, Args: []string{"--mode", "validate"}})
	if r.ExitCode != 1 || !strings.Contains(r.Stderr, "error initializing configuration '"+r.ConfigPath+"'") ||
		!strings.Contains(r.Stderr, "config asked to be rejected") || strings.Contains(r.Stdout, "OK") {
		t.Errorf("validate of a rejected plugin config: exit %d, stdout %q, stderr:\n%s", r.ExitCode, r.Stdout, r.Stderr)
	}

	// A field moe-host cannot run: moectl names its YAML path.
	bad := strings.Replace(readTemplate(t, "logstart"), "stat_prefix: logstart", "stat_prefix: logstart\n          use_remote_address: true", 1)
	r = hosttest.Run(t, bad, hosttest.Vars{"A1": freePort(t)}, hosttest.Options{Library: "libconformance.so", Listeners: []string{"main"},
		Args: []string{"--mode", "validate"}})
	if r.ExitCode != 1 || !strings.Contains(r.Stderr, "use_remote_address: not supported by moe-host") {
		t.Errorf("validate of a refused field: exit %d, stderr:\n%s", r.ExitCode, r.Stderr)
	}
}

// TestCLIModeInitOnly: --mode init_only initializes (listeners bound, admin up) and exits 0;
// --admin-address-path receives the admin address.
func TestCLIModeInitOnly(t *testing.T) {
	findBinaries(t)
	addrFile := filepath.Join(t.TempDir(), "admin.addr")
	r := hosttest.Run(t, readTemplate(t, "logstart"), hosttest.Vars{"A1": freePort(t)},
		hosttest.Options{Library: "libconformance.so", Listeners: []string{"main"}, Args: []string{"--mode", "init_only", "--admin-address-path", addrFile}})
	if r.ExitCode != 0 {
		t.Fatalf("init_only: exit %d, stderr:\n%s", r.ExitCode, r.Stderr)
	}
	b, err := os.ReadFile(addrFile)
	if err != nil || !regexp.MustCompile(`^127\.0\.0\.1:\d+$`).Match(b) {
		t.Errorf("--admin-address-path: %q %v", b, err)
	}
}
