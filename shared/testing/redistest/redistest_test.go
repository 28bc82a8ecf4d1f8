package redistest

import "testing"

func TestRestartsOnTheSamePortEmpty(t *testing.T) {
	r := Start(t)
	if _, err := r.Do("SET", "k", "v"); err != nil {
		t.Fatal(err)
	}
	r.Stop()
	if _, err := r.Do("PING"); err == nil {
		t.Fatal("PING answered after Stop")
	}
	r.Start()
	if v, err := r.Do("EXISTS", "k"); err != nil || v.(int64) != 0 {
		t.Fatalf("after restart: %v %v (want an empty server)", v, err)
	}
}
