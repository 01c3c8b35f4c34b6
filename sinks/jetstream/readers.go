package jetstream

import (
	"context"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// ReaderIdle is how long the server keeps a reader's consumer once no one
// pulls from it: herald's readers (who, history, tail, followers, a
// bridge reading what it published last) make ordered consumers, which
// the client does not delete when it stops reading, and which it
// otherwise makes to live five idle minutes. A server keeps at most
// 1,000 consumers a stream by default (nats-server 2.11 and later), so
// `herald who --nats` run every few tens of milliseconds filled the
// events stream in under a minute, and every reader of it, the next
// `who` included, was refused ("maximum consumers limit reached"). A
// reader that stops reading deletes its consumer too (DropConsumer);
// this bounds what a reader killed mid-read leaves behind.
const ReaderIdle = 30 * time.Second

// DropConsumer deletes the consumer c on stream, which its reader is done
// with, so that it does not count against the stream's limit while the
// server waits out ReaderIdle. It is best effort: a consumer it cannot
// delete goes once idle that long.
func DropConsumer(js jetstream.JetStream, stream string, c jetstream.Consumer) {
	if c == nil {
		return
	}
	info := c.CachedInfo()
	if info == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = js.DeleteConsumer(ctx, stream, info.Name)
}
