package hosttest

import (
	"errors"
	"fmt"
	"net"
	"syscall"
	"testing"
)

func TestClosedPortRefusesAndCannotBeTaken(t *testing.T) {
	p := ClosedPort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", p)
	if _, err := net.Dial("tcp", addr); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dial %s: %v, want connection refused", addr, err)
	}
	if l, err := net.Listen("tcp", addr); err == nil {
		l.Close()
		t.Fatalf("another listener took %s", addr)
	}
}
