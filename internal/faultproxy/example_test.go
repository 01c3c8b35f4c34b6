package faultproxy_test

import (
	"fmt"
	"io"
	"net"

	"github.com/zkherald/herald/internal/faultproxy"
)

func ExampleProxy_Refuse() {
	// A tiny server that greets every connection.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			io.WriteString(c, "hello\n")
			c.Close()
		}
	}()

	p, err := faultproxy.New(ln.Addr().String())
	if err != nil {
		panic(err)
	}
	defer p.Close()

	read := func() string {
		c, err := net.Dial("tcp", p.Addr())
		if err != nil {
			return err.Error()
		}
		defer c.Close()
		b, _ := io.ReadAll(c)
		return fmt.Sprintf("%q", b)
	}
	fmt.Println(read())
	p.Refuse(true)
	fmt.Println(read())
	p.Refuse(false)
	fmt.Println(read())
	// Output:
	// "hello\n"
	// ""
	// "hello\n"
}
