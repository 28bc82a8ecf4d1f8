// Command echo-upstream is the demo and test upstream behind moe-host and Envoy in `make run`.
// Every request is answered with a JSON description of itself; a few paths do more:
//
//	/status/<code>  answer with that status code
//	/delay/<ms>     wait first
//	/chunked        a chunked response ending with trailer x-upstream-trailer: done
//	/bytes/<n>      n bytes of body
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
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "listen address")
	flag.Parse()
	if err := serve(*addr); err != nil {
		log.Fatalf("echo-upstream: %v", err)
	}
}

func serve(addr string) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: newHandler(), ReadHeaderTimeout: 10 * time.Second}
	log.Printf("echo-upstream listening on %s", ln.Addr())
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
