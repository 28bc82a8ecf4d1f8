// Package compile turns a decoded, validated Envoy bootstrap into the compiled bootstrap that
// moe-host runs (package bootstrap). Every converter lists the proto fields it implements;
// any other field that is set is refused with its YAML path, so nothing that would change
// behaviour in Envoy is silently dropped.
package compile

import (
	"errors"
	"fmt"
	"os"
	"time"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"

	"github.com/moeproxy/moe/cmd/moectl/internal/bootstrap"
	"github.com/moeproxy/moe/cmd/moectl/internal/load"
	"github.com/moeproxy/moe/cmd/moectl/internal/ypath"
)

// Options tune checks that touch the machine moectl runs on.
type Options struct {
	// StatLibrary checks that a golang filter's library_path exists. Nil means os.Stat of the
	// path as written: Envoy resolves relative paths against its working directory, and so
	// does moe-host, so moectl does not rewrite them.
	StatLibrary func(path string) error
	// SkipLibraryCheck disables the library_path check (validating before the .so is built).
	SkipLibraryCheck bool
	// SkipPluginCheck disables plugincheck.Validate (plugin configs pass unchecked).
	SkipPluginCheck bool
	// Now stamps the config dump's last_updated; nil means time.Now.
	Now func() time.Time
}

// Result is a compiled bootstrap and the non-fatal findings about it.
type Result struct {
	Bootstrap *bootstrap.Bootstrap
	// Warnings are configs Envoy accepts but that probably do not do what was meant.
	Warnings []string
}

// File loads, validates and compiles the bootstrap at path. The error lists every problem
// found, decoding and validation ones first.
func File(path string, opts Options) (*Result, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read bootstrap: %w", err)
	}
	return Bytes(data, opts)
}

// Bytes is File for a bootstrap already in memory (YAML or JSON).
func Bytes(data []byte, opts Options) (*Result, error) {
	bs, loadErr := load.Bytes(data)
	if bs == nil {
		return nil, loadErr
	}
	res, err := Compile(bs, opts)
	if loadErr != nil {
		return nil, joinLists(loadErr, err)
	}
	return res, err
}

// Compile converts bs. It assumes bs was decoded by package load.
func Compile(bs *bootstrapv3.Bootstrap, opts Options) (*Result, error) {
	c := &compiler{opts: opts, secrets: map[string][]byte{}, clusters: map[string]bool{}}
	out := c.bootstrap(bs)
	if err := c.errs.Err(); err != nil {
		return nil, err
	}
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	dump, err := configDump(bs, now())
	if err != nil {
		return nil, fmt.Errorf("config dump: %w", err)
	}
	out.ConfigDump = dump
	return &Result{Bootstrap: out, Warnings: c.warnings}, nil
}

// compiler carries what one compilation has learnt so far.
type compiler struct {
	opts     Options
	errs     ypath.Errors
	warnings []string
	// secrets are static_resources.secrets generic secrets by name.
	secrets map[string][]byte
	// clusters are the names of static_resources.clusters, for route validation.
	clusters map[string]bool
	// cds is set when clusters also come by CDS: static route tables cannot be checked
	// against the cluster list then.
	cds bool
	// bootstrapProto is the bootstrap being compiled (or the one a resource file belongs to).
	bootstrapProto *bootstrapv3.Bootstrap
	// nodeChecked: the node check of xDS subscriptions was made (reported once).
	nodeChecked bool
}

func (c *compiler) warnf(p ypath.Path, format string, args ...any) {
	c.warnings = append(c.warnings, p.String()+": "+fmt.Sprintf(format, args...))
}

func (c *compiler) statLibrary(path string) error {
	if c.opts.StatLibrary != nil {
		return c.opts.StatLibrary(path)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return fmt.Errorf("%s is a directory", path)
	}
	return nil
}

func (c *compiler) bootstrap(bs *bootstrapv3.Bootstrap) *bootstrap.Bootstrap {
	root := ypath.Path{}
	c.bootstrapProto = bs
	c.only(root, bs, "static_resources", "admin", "dynamic_resources")
	out := &bootstrap.Bootstrap{Listeners: []bootstrap.Listener{}, Clusters: []bootstrap.Cluster{}}
	if a := bs.GetAdmin(); a != nil {
		p := root.Field("admin")
		c.only(p, a, "address")
		if a.GetAddress() != nil {
			addr := c.socketAddress(p.Field("address"), a.GetAddress(), false)
			out.Admin = &addr
		}
	}
	out.DynamicResources = c.dynamicResources(root.Field("dynamic_resources"), bs)
	c.cds = out.DynamicResources != nil && out.DynamicResources.CDS != nil
	sr := bs.GetStaticResources()
	p := root.Field("static_resources")
	c.only(p, sr, "listeners", "clusters", "secrets")
	// Secrets and clusters first: listeners refer to them.
	for i, s := range sr.GetSecrets() {
		c.secret(p.Field("secrets").Index(i), s)
	}
	for i, cl := range sr.GetClusters() {
		if got, ok := c.cluster(p.Field("clusters").Index(i), cl); ok {
			out.Clusters = append(out.Clusters, got)
		}
	}
	names := map[string]int{}
	for i, l := range sr.GetListeners() {
		lp := p.Field("listeners").Index(i)
		if j, dup := names[l.GetName()]; dup && l.GetName() != "" {
			c.errs.Addf(lp.Field("name"), "listener name %q is already used by listeners[%d]", l.GetName(), j)
		}
		names[l.GetName()] = i
		out.Listeners = append(out.Listeners, c.listener(lp, l))
	}
	return out
}

// joinLists merges error lists so the CLI prints one problem per line.
func joinLists(errs ...error) error {
	var all ypath.List
	for _, err := range errs {
		var l ypath.List
		switch {
		case err == nil:
		case errors.As(err, &l):
			all = append(all, l...)
		default:
			all = append(all, err)
		}
	}
	if len(all) == 0 {
		return nil
	}
	return all
}
