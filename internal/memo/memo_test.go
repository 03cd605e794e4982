package memo

import (
	"sync"
	"testing"
)

func TestMap(t *testing.T) {
	c := Map[string, int]{Max: 2}
	if _, ok := c.Get("a"); ok {
		t.Fatal("empty map has a")
	}
	c.Put("a", 1)
	c.Put("b", 2)
	c.Put("c", 3) // full: not kept
	if v, ok := c.Get("a"); !ok || v != 1 {
		t.Errorf("a = %d, %v", v, ok)
	}
	if v, ok := c.Get("b"); !ok || v != 2 {
		t.Errorf("b = %d, %v", v, ok)
	}
	if _, ok := c.Get("c"); ok {
		t.Error("c kept beyond Max")
	}
	if c.Len() != 2 {
		t.Errorf("Len = %d", c.Len())
	}
}

func TestMapConcurrent(t *testing.T) {
	c := Map[int, int]{Max: 64}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 100 {
				k := (g*100 + i) % 80
				if v, ok := c.Get(k); ok && v != k*k {
					t.Errorf("%d = %d", k, v)
				}
				c.Put(k, k*k)
			}
		})
	}
	wg.Wait()
	if c.Len() > 64 {
		t.Errorf("Len = %d, Max 64", c.Len())
	}
}

func TestGetAllocatesNothing(t *testing.T) {
	c := Map[string, int]{Max: 8}
	c.Put("k", 1)
	if n := testing.AllocsPerRun(100, func() { c.Get("k") }); n != 0 {
		t.Errorf("Get: %.0f allocations", n)
	}
}
