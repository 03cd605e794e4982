package testenv

import "context"

// StallingBody is a request body that sends its data, then blocks until
// its context ends: a client that stops sending mid-request (a dropped
// connection, a train in a tunnel).
type StallingBody struct {
	ctx  context.Context
	data []byte
	sent chan struct{}
}

// NewStallingBody returns a body that sends data, then blocks until ctx ends.
func NewStallingBody(ctx context.Context, data []byte) *StallingBody {
	return &StallingBody{ctx: ctx, data: data, sent: make(chan struct{})}
}

// Sent is closed once every byte of the data has been read.
func (b *StallingBody) Sent() <-chan struct{} { return b.sent }

func (b *StallingBody) Read(p []byte) (int, error) {
	if len(b.data) == 0 {
		select {
		case <-b.sent:
		default:
			close(b.sent)
		}
		<-b.ctx.Done()
		return 0, b.ctx.Err()
	}
	n := copy(p, b.data)
	b.data = b.data[n:]
	return n, nil
}
