package httpapi

// A write goes deep: the request chain, admission, the registry, etcd's
// client and then etcd's server in this process. Go's HTTP/2 server runs
// each request on a goroutine of its own, whose stack starts small and,
// on the way down, is grown by copying every frame above, each request
// again (9 µs of an HTTP create's 250, in the profile of http.create;
// gRPC's server runs its calls on long-lived workers whose stacks have
// grown once). growStack grows it at once while it is still shallow,
// where the copy has a few frames to move.

// writeStackBytes is what growStack's frame takes: with what the
// goroutine already uses, its stack doubles to 16 KiB, enough for a
// create's deepest call (in http.create's profile, no write grows its
// stack again). A 16 KiB frame made it 32 KiB, a size the runtime's
// per-P stack cache does not keep: allocating and freeing it went to
// the heap, and the copy cost 3.8 µs per create where this one costs 2.1.
const writeStackBytes = 8 << 10

// growStack has a frame of writeStackBytes, so that calling it grows the
// stack in one step. It returns the byte at i of it, zero, so that the
// frame is not optimized away.
//
//go:noinline
func growStack(i int) byte {
	var frame [writeStackBytes]byte
	return frame[i%writeStackBytes]
}
