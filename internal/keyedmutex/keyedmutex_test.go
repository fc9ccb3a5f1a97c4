package keyedmutex

import (
	"sync"
	"testing"
	"time"
)

func TestMapSerialisesOneKeyOnly(t *testing.T) {
	var k Map
	unlockA := k.Lock("a")
	got := make(chan string, 2)
	var wg sync.WaitGroup
	for _, key := range []string{"a", "b"} {
		wg.Go(func() {
			unlock := k.Lock(key)
			got <- key
			unlock()
		})
	}
	select {
	case first := <-got:
		if first != "b" {
			t.Fatalf("%q locked while a held it", first)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("another key waited for a held one")
	}
	select {
	case key := <-got:
		t.Fatalf("%q locked while a held it", key)
	case <-time.After(50 * time.Millisecond):
	}
	unlockA()
	wg.Wait()
	if key := <-got; key != "a" {
		t.Fatalf("got %q after the unlock, want a", key)
	}
}
