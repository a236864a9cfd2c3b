package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gatedEngine compiles the schema "slow" only once release is closed,
// and counts the sessions closed.
type gatedEngine struct {
	release chan struct{}
	closed  chan string
}

type gatedSession struct {
	name   string
	closed chan string
}

func (e gatedEngine) compile(schema []byte) (maskSession, error) {
	switch string(schema) {
	case "slow":
		<-e.release
	case "20ms":
		time.Sleep(20 * time.Millisecond)
	}
	return gatedSession{string(schema), e.closed}, nil
}

func (s gatedSession) fillMask([]uint32) {}
func (s gatedSession) advance(int) error { return nil }
func (s gatedSession) reset() error      { return nil }
func (s gatedSession) close()            { s.closed <- s.name }

// TestCompilerTimeout: a compile past the limit is a timeout; the
// compiles after it run on a new goroutine without waiting for it, and
// its session is closed when it ends.
func TestCompilerTimeout(t *testing.T) {
	e := gatedEngine{release: make(chan struct{}), closed: make(chan string, 1)}
	c := newCompiler(e)
	defer c.stop()
	m, _, err := c.compileWithin([]byte("fast"), time.Minute)
	require.NoError(t, err)
	assert.Equal(t, "fast", m.(gatedSession).name)
	_, _, err = c.compileWithin([]byte("slow"), 10*time.Millisecond)
	require.ErrorIs(t, err, errTimeout)
	after := make(chan maskSession, 1)
	go func() {
		m, _, err := c.compileWithin([]byte("after"), time.Minute)
		assert.NoError(t, err)
		after <- m
	}()
	select {
	case m := <-after:
		assert.Equal(t, "after", m.(gatedSession).name)
	case <-time.After(10 * time.Second):
		t.Fatal("the next compile waits behind the timed-out one")
	}
	close(e.release)
	select {
	case name := <-e.closed:
		assert.Equal(t, "slow", name, "the timed-out compile's session is closed when it ends")
	case <-time.After(time.Minute):
		t.Fatal("the timed-out session was never closed")
	}
}

// TestCompilerTimesTheCompile: the time compileWithin returns (TTFM) is
// the engine's compile call, within the wall time around compileWithin.
func TestCompilerTimesTheCompile(t *testing.T) {
	c := newCompiler(gatedEngine{})
	defer c.stop()
	t0 := time.Now()
	_, took, err := c.compileWithin([]byte("20ms"), time.Minute)
	wall := time.Since(t0)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, took, 20*time.Millisecond)
	assert.LessOrEqual(t, took, wall)
}
