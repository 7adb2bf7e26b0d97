// The peers of bench/csp_bench.cc: the same scenarios on Go's channels and goroutines,
// run by bench/csp_compare.py (go test -bench . -count N) in the same session.
// Per-op figures match the C++ ones: a round trip, a message, a whole chain, a goroutine.
package peers

import (
	"fmt"
	"sync/atomic"
	"testing"
)

func BenchmarkPingPong(b *testing.B) {
	ping, pong := make(chan int64), make(chan int64)
	go func() {
		for v := range ping {
			pong <- v
		}
	}()
	for i := 0; i < b.N; i++ {
		ping <- 1
		<-pong
	}
	close(ping)
}

func BenchmarkSelectPingPong(b *testing.B) {
	ping, pong, quit := make(chan int64), make(chan int64), make(chan int64)
	go func() {
		for {
			select {
			case v := <-ping:
				pong <- v
			case <-quit:
				return
			}
		}
	}()
	for i := 0; i < b.N; i++ {
		ping <- 1
		<-pong
	}
	close(quit)
}

func BenchmarkProdCons(b *testing.B) {
	for _, capacity := range []int{0, 1, 100} {
		b.Run(fmt.Sprintf("cap=%d", capacity), func(b *testing.B) {
			ch := make(chan int64, capacity)
			go func() {
				for i := 0; i < b.N; i++ {
					ch <- 1
				}
			}()
			var sum int64 // the program's consumer adds what it receives
			for i := 0; i < b.N; i++ {
				sum += <-ch
			}
			if sum != int64(b.N) {
				b.Fatalf("received %d, want %d", sum, b.N)
			}
		})
	}
}

func whisper(left, right chan int64) { left <- 1 + <-right }

func BenchmarkDaisyChain(b *testing.B) {
	for _, n := range []int{10000, 100000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				leftmost := make(chan int64)
				left, right := leftmost, leftmost
				for j := 0; j < n; j++ {
					right = make(chan int64)
					go whisper(left, right)
					left = right
				}
				go func(c chan int64) { c <- 1 }(right)
				if got := <-leftmost; got != int64(n+1) {
					b.Fatalf("chain of %d gave %d", n, got)
				}
			}
		})
	}
}

func BenchmarkSpawn(b *testing.B) {
	done := make(chan int64, 1)
	var left int64
	for i := 0; i < b.N; i++ {
		// One goroutine per iteration; the last of each batch of 1000 signals done.
		atomic.StoreInt64(&left, 1000)
		for j := 0; j < 1000; j++ {
			go func() {
				if atomic.AddInt64(&left, -1) == 0 {
					done <- 1
				}
			}()
		}
		<-done
	}
}

// What examples/csp/scenarios.cc's SpawnMany program does, which cannot count atomically:
// each goroutine sends one value on a channel buffering a whole batch, and the main
// goroutine receives the batch and adds it up. The Rill program's spawn row is measured
// against this one.
func BenchmarkSpawnSend(b *testing.B) {
	done := make(chan int64, 1000)
	for i := 0; i < b.N; i++ {
		for j := 0; j < 1000; j++ {
			go func() { done <- 1 }()
		}
		var count int64
		for j := 0; j < 1000; j++ {
			count += <-done
		}
		if count != 1000 {
			b.Fatalf("batch counted %d", count)
		}
	}
}
