// Package faultproxy is a TCP proxy on loopback that sits between a
// ZooKeeper client and one ZooKeeper server and injects network faults on
// command, for herald's fault-injection tests.
//
//	p, err := faultproxy.New(server.Addr()) // listens on 127.0.0.1:0
//	defer p.Close()
//	conn, _, err := zk.Connect([]string{p.Addr()}, time.Second)
//
//	p.Cut()                           // reset every connection; the client reconnects, same session
//	p.Blackhole(true)                 // partition: nothing flows, pings go unanswered, the session expires
//	p.Blackhole(false)                // heal: held bytes flow again; the client learns it expired
//	p.Refuse(true)                    // new connections are closed at once
//	p.DropReplyTo(faultproxy.OpCreate) // the next create runs on the server, but its reply is
//	                                   // swallowed and the connection cut: "connection loss during create"
//	held := p.HoldReplyTo(faultproxy.OpMulti) // the next multi runs on the server; its reply
//	<-held                            // waits, on an open connection, until
//	p.Release()                       // this
//	p.Delay(time.Millisecond)         // new connections: every packet a millisecond late each way,
//	                                   // as between machines
//
// The proxy reads ZooKeeper's framing (a 4-byte big-endian length before
// every packet). The first packet each way is the connect request and
// response; later client packets begin with xid and opcode, server replies
// with xid, zxid and error code. DropReplyTo uses that to match a reply to
// its request by xid. Bytes that are not framed this way (four-letter
// commands such as ruok) are relayed unchanged.
package faultproxy
