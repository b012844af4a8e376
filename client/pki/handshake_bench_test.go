package pki_test

import (
	"crypto/tls"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/netmgr/netmgr/client/pki"
)

// BenchmarkMutualHandshake is the CPU one stub's connection to a server
// costs both ends together: a full TLS 1.3 handshake with certificates on
// both sides, over loopback, as a stub that joins the pool makes once
// (its renewal connection). It reports cpu-ms/handshake (user and
// system, both ends, from the process's rusage).
func BenchmarkMutualHandshake(b *testing.B) {
	files, err := pki.MakeCluster(b.TempDir(), time.Hour, srvID, stubID)
	if err != nil {
		b.Fatal(err)
	}
	srv, err := pki.Load(files[srvID])
	if err != nil {
		b.Fatal(err)
	}
	stub, err := pki.Load(files[stubID])
	if err != nil {
		b.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", srv.ServerConfig(true))
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				_ = c.(*tls.Conn).Handshake()
				c.Close()
			}()
		}
	}()
	cfg := stub.ClientConfig(pki.RoleServer)
	var before, after syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	b.ResetTimer()
	for b.Loop() {
		raw, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			b.Fatal(err)
		}
		c := tls.Client(raw, cfg)
		if err := c.Handshake(); err != nil {
			b.Fatal(err)
		}
		// The server's half ends with its Finished read; one byte read
		// back (EOF) waits for it.
		_, _ = c.Read(make([]byte, 1))
		c.Close()
	}
	b.StopTimer()
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	cpu := time.Duration(after.Utime.Nano()+after.Stime.Nano()-before.Utime.Nano()-before.Stime.Nano()) * time.Nanosecond
	b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/handshake")
}
