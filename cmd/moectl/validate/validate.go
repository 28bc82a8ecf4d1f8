// Package validate is `moectl validate`: it checks Envoy bootstraps, xDS resource files
// (listeners, routes, clusters) and Kubernetes YAML with Istio resources (EnvoyFilters
// above all) offline, the way Envoy v1.39 (contrib) and istiod would: strict decoding with
// Envoy's and Istio's protos, their validation rules (inside every Any too), the checks
// Envoy makes when it loads a config (filter order, cluster references, ...), and every moe
// plugin config with the framework's whole parse, Init included (in a process without
// network). Every problem is reported with file, line, column and YAML path, plugin and field.
//
// With TargetMoeHost, what moe-host cannot run is added as warnings (moectl compile's
// refusals), so the same check serves both targets.
package validate

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/moeproxy/moe/cmd/moectl/internal/pluginconfig"
	"github.com/moeproxy/moe/cmd/moectl/internal/yamltree"
	"github.com/moeproxy/moe/cmd/moectl/internal/ypath"
)

// Severity of a finding.
type Severity string

const (
	Error   Severity = "error"
	Warning Severity = "warning"
)

// Finding is one problem, located.
type Finding struct {
	File   string `json:"file"`
	Line   int    `json:"line,omitempty"`
	Column int    `json:"column,omitempty"`
	// Object names the Kubernetes object of a multi-document file ("EnvoyFilter
	// istio-system/moe-gateway") or the document ("document 2").
	Object string `json:"object,omitempty"`
	// Path is the YAML path inside the document.
	Path string `json:"path,omitempty"`
	// Plugin and Field are set for a moe plugin config problem: the plugin and the field of
	// its config (as the framework names it).
	Plugin   string   `json:"plugin,omitempty"`
	Field    string   `json:"field,omitempty"`
	Severity Severity `json:"severity"`
	Message  string   `json:"message"`
}

// String is "file:line:col: severity: [object: ]path: message", the form editors and CI
// annotations read.
func (f Finding) String() string {
	var b strings.Builder
	b.WriteString(f.File)
	if f.Line > 0 {
		fmt.Fprintf(&b, ":%d:%d", f.Line, f.Column)
	}
	fmt.Fprintf(&b, ": %s: ", f.Severity)
	if f.Object != "" {
		b.WriteString(f.Object + ": ")
	}
	if f.Path != "" {
		b.WriteString(f.Path + ": ")
	}
	b.WriteString(f.Message)
	return b.String()
}

// Options tune the checks.
type Options struct {
	// TargetMoeHost adds, as warnings, what moe-host cannot run (bootstraps only).
	TargetMoeHost bool
	// SkipLibraryCheck skips the warning for a golang filter library_path that does not
	// exist on this machine (bootstraps only; EnvoyFilters name a path inside the pod).
	SkipLibraryCheck bool
	// SkipPluginCheck does not check moe plugin configs.
	SkipPluginCheck bool
	// NoPluginInit checks plugin configs by decoding and Validate() only, without running
	// their Init (in check-only mode) as the framework's whole parse does.
	NoPluginInit bool
}

// FileResult is what was found in one file.
type FileResult struct {
	File string `json:"file"`
	// Checked names what the file holds ("Envoy bootstrap", "EnvoyFilter ns/name", ...).
	Checked []string `json:"checked"`
	// Skipped names documents that were not checked (Kubernetes kinds moectl does not know).
	Skipped []string `json:"skipped,omitempty"`
	// PluginConfigs counts the moe plugin configs checked.
	PluginConfigs int       `json:"plugin_configs"`
	Findings      []Finding `json:"findings"`
}

// Errors counts the findings of severity Error.
func (r *FileResult) Errors() int {
	n := 0
	for _, f := range r.Findings {
		if f.Severity == Error {
			n++
		}
	}
	return n
}

// Report is the result of a run.
type Report struct {
	Files []*FileResult `json:"files"`
}

// Errors counts errors over all files.
func (r *Report) Errors() int {
	n := 0
	for _, f := range r.Files {
		n += f.Errors()
	}
	return n
}

// Files checks every file. "-" reads standard input.
func Files(paths []string, opts Options) *Report {
	r := newRun(opts)
	for _, p := range paths {
		var data []byte
		var err error
		if p == "-" {
			data, err = io.ReadAll(os.Stdin)
		} else {
			data, err = os.ReadFile(p)
		}
		fr := &FileResult{File: p}
		r.report.Files = append(r.report.Files, fr)
		if err != nil {
			fr.Findings = append(fr.Findings, Finding{File: p, Severity: Error, Message: err.Error()})
			continue
		}
		r.file(fr, data)
	}
	r.finish()
	return r.report
}

// Bytes checks one file's contents; name is used in findings.
func Bytes(name string, data []byte, opts Options) *Report {
	r := newRun(opts)
	fr := &FileResult{File: name}
	r.report.Files = append(r.report.Files, fr)
	r.file(fr, data)
	r.finish()
	return r.report
}

// run is one invocation: plugin configs of every file are checked together at the end.
type run struct {
	opts    Options
	report  *Report
	targets []*pluginTarget
}

func newRun(opts Options) *run { return &run{opts: opts, report: &Report{}} }

// doc is one document being checked.
type doc struct {
	r      *run
	fr     *FileResult
	yd     yamltree.Doc
	object string
	multi  bool // the file has several documents
}

func (d *doc) add(sev Severity, p ypath.Path, plugin, field, msg string) {
	f := Finding{File: d.fr.File, Object: d.object, Path: p.Raw(), Plugin: plugin, Field: field, Severity: sev, Message: msg}
	if d.yd.Root != nil {
		n, exact := d.yd.Root.Lookup(p)
		switch {
		case exact:
			if l, c, ok := d.yd.Root.KeyPosition(p); ok {
				f.Line, f.Column = l, c
			} else {
				f.Line, f.Column = n.Line, n.Column
			}
		case n != nil:
			f.Line, f.Column = n.Line, n.Column
		}
	} else {
		f.Line = d.yd.Line
	}
	d.fr.Findings = append(d.fr.Findings, f)
}

func (d *doc) errorf(p ypath.Path, format string, args ...any) {
	d.add(Error, p, "", "", fmt.Sprintf(format, args...))
}

func (d *doc) warnf(p ypath.Path, format string, args ...any) {
	d.add(Warning, p, "", "", fmt.Sprintf(format, args...))
}

// addErrs turns collected path errors into findings.
func (d *doc) addErrs(errs *ypath.Errors, sev Severity, prefix string) {
	for _, e := range errs.List() {
		var pe *ypath.Error
		if errors.As(e, &pe) {
			d.add(sev, pe.Path, "", "", prefix+pe.Msg)
			continue
		}
		d.add(sev, ypath.Path{}, "", "", prefix+e.Error())
	}
}

func (r *run) file(fr *FileResult, data []byte) {
	docs, err := yamltree.Parse(data)
	var pe *yamltree.PosError
	if err != nil {
		f := Finding{File: fr.File, Severity: Error, Message: "parse YAML: " + err.Error()}
		if errors.As(err, &pe) {
			f.Line, f.Column, f.Message = pe.Line, pe.Column, "parse YAML: "+pe.Msg
		}
		fr.Findings = append(fr.Findings, f)
		return
	}
	nonEmpty := 0
	for _, yd := range docs {
		if yd.Root != nil {
			nonEmpty++
		}
	}
	bootstraps := 0
	for _, yd := range docs {
		d := &doc{r: r, fr: fr, yd: yd, multi: nonEmpty > 1}
		if yd.Root == nil {
			continue
		}
		if d.multi {
			d.object = fmt.Sprintf("document %d", yd.Index+1)
		}
		obj, ok := yd.Root.Value.(map[string]any)
		if !ok {
			d.errorf(ypath.Path{}, "a document must be a mapping (an Envoy bootstrap, xDS resources or a Kubernetes object), got %s", kindOf(yd.Root.Value))
			continue
		}
		switch {
		case has(obj, "apiVersion") || has(obj, "kind"):
			d.kubernetes(obj)
		case has(obj, "resources") && !has(obj, "static_resources") && !has(obj, "staticResources"):
			d.xdsResources(obj)
		case has(obj, "@type"):
			d.xdsResource(obj)
		default:
			bootstraps++
			if bootstraps > 1 {
				d.errorf(ypath.Path{}, "a second Envoy bootstrap in one file: Envoy reads one document")
				continue
			}
			d.bootstrap(yd)
		}
	}
	if len(fr.Checked) == 0 && len(fr.Skipped) == 0 && len(fr.Findings) == 0 {
		fr.Findings = append(fr.Findings, Finding{File: fr.File, Severity: Error, Message: "the file is empty"})
	}
}

func has(m map[string]any, k string) bool { _, ok := m[k]; return ok }

func kindOf(v any) string {
	switch v.(type) {
	case []any:
		return "a list"
	case string:
		return "a string"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

// pluginTarget is a plugin config found in a document.
type pluginTarget struct {
	d *doc
	// at is the YAML path of the Any; value is where its TypedStruct value starts.
	at, value ypath.Path
	tg        pluginconfig.Target
}

func (r *run) finish() {
	if len(r.targets) > 0 && !r.opts.SkipPluginCheck {
		r.checkPlugins()
	}
	for _, fr := range r.report.Files {
		sort.SliceStable(fr.Findings, func(i, j int) bool {
			a, b := fr.Findings[i], fr.Findings[j]
			if a.Line != b.Line {
				return a.Line < b.Line
			}
			return a.Column < b.Column
		})
		fr.Findings = dedupe(fr.Findings)
	}
}

func dedupe(fs []Finding) []Finding {
	seen := map[string]bool{}
	out := fs[:0]
	for _, f := range fs {
		b, _ := json.Marshal(f)
		if seen[string(b)] {
			continue
		}
		seen[string(b)] = true
		out = append(out, f)
	}
	return out
}

func (r *run) checkPlugins() {
	for _, t := range r.targets {
		t.d.fr.PluginConfigs++
		for _, p := range pluginconfig.Check(t.tg, !r.opts.NoPluginInit) {
			at := t.value
			if p.At != "" {
				at = at.Join(ypath.Parse(p.At))
			}
			t.d.add(Error, at, p.Plugin, p.Field, p.Message)
		}
	}
}
