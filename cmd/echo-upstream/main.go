// Command echo-upstream is the demo upstream behind moe-host and Envoy in `make run`: the
// handler of shared/testing/echo (the same one every end-to-end test uses) on an address.
// Every request is answered with a JSON description of itself; see that package for the
// paths that do more (/status/<code>, /delay/<ms>, /chunked, /bytes/<n>).
package main

import (
	"context"
	"errors"
	"flag"
	"log"
	"net"
	"net/http"
	"os/signal"
	"syscall"
	"time"

	"github.com/moeproxy/moe/shared/testing/echo"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "listen address")
	name := flag.String("name", "echo", "upstream name, reported in the JSON and in x-upstream")
	flag.Parse()
	if err := serve(*addr, *name); err != nil {
		log.Fatalf("echo-upstream: %v", err)
	}
}

func serve(addr, name string) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: echo.NewHandler(name), ReadHeaderTimeout: 10 * time.Second}
	log.Printf("echo-upstream %s listening on %s", name, ln.Addr())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
