package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/moeproxy/moe/cmd/moectl/internal/compile"
	"github.com/moeproxy/moe/cmd/moectl/internal/ypath"
)

// commonFlags are shared by compile and validate.
type commonFlags struct {
	config      string
	skipLibrary bool
	skipPlugins bool
}

func (cf *commonFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&cf.config, "c", "", "Envoy bootstrap file (YAML or JSON)")
	fs.BoolVar(&cf.skipLibrary, "skip-library-check", false, "do not check that golang filters' library_path exists")
	fs.BoolVar(&cf.skipPlugins, "skip-plugin-check", false, "do not check plugin configs with moe's plugin registry")
}

func parseFlags(name string, args []string, stderr io.Writer, extra func(*flag.FlagSet)) (*commonFlags, bool) {
	fs := flag.NewFlagSet("moectl "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	cf := &commonFlags{}
	cf.register(fs)
	if extra != nil {
		extra(fs)
	}
	if err := fs.Parse(args); err != nil {
		return nil, false
	}
	if cf.config == "" || fs.NArg() > 0 {
		fmt.Fprintf(stderr, "moectl %s: -c FILE is required and takes no other arguments\n", name)
		fs.Usage()
		return nil, false
	}
	return cf, true
}

func (cf *commonFlags) compile(stderr io.Writer) (*compile.Result, error) {
	res, err := compile.File(cf.config, compile.Options{SkipLibraryCheck: cf.skipLibrary, SkipPluginCheck: cf.skipPlugins})
	if res != nil {
		for _, w := range res.Warnings {
			fmt.Fprintf(stderr, "moectl: warning: %s\n", w)
		}
	}
	return res, err
}

func cmdCompile(args []string, stdout, stderr io.Writer) int {
	var out string
	cf, ok := parseFlags("compile", args, stderr, func(fs *flag.FlagSet) {
		fs.StringVar(&out, "o", "", "write the JSON here instead of standard output")
	})
	if !ok {
		return 2
	}
	res, err := cf.compile(stderr)
	if err != nil {
		printErrors(stderr, cf.config, err)
		return 1
	}
	js, err := json.MarshalIndent(res.Bootstrap, "", "  ")
	if err != nil {
		fmt.Fprintf(stderr, "moectl: encode compiled bootstrap: %v\n", err)
		return 1
	}
	js = append(js, '\n')
	if out == "" {
		_, err = stdout.Write(js)
	} else {
		err = os.WriteFile(out, js, 0o644)
	}
	if err != nil {
		fmt.Fprintf(stderr, "moectl: write compiled bootstrap: %v\n", err)
		return 1
	}
	return 0
}

func cmdValidate(args []string, stdout, stderr io.Writer) int {
	cf, ok := parseFlags("validate", args, stderr, nil)
	if !ok {
		return 2
	}
	if _, err := cf.compile(stderr); err != nil {
		printErrors(stderr, cf.config, err)
		return 1
	}
	fmt.Fprintln(stdout, "ok")
	return 0
}

// printErrors prints one problem per line under the file name.
func printErrors(w io.Writer, file string, err error) {
	var list ypath.List
	if !errors.As(err, &list) {
		fmt.Fprintf(w, "moectl: %s: %v\n", file, err)
		return
	}
	fmt.Fprintf(w, "moectl: %s: %d error(s):\n", file, len(list))
	for _, e := range list {
		fmt.Fprintf(w, "  %v\n", e)
	}
}
