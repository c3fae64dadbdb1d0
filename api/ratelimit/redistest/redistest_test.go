package redistest

import (
	"context"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRedisInstanceLifecycle(t *testing.T) {
	in := Start(t)
	require.NoError(t, ping(in.Addr()), "answers PING once Start returns")

	opt, err := redis.ParseURL(in.URL(3))
	require.NoError(t, err)
	assert.Equal(t, in.Addr(), opt.Addr)
	assert.Equal(t, 3, opt.DB)
	client := redis.NewClient(opt)
	t.Cleanup(func() { _ = client.Close() })
	ctx := t.Context()
	require.NoError(t, client.Set(ctx, "k", "v", 0).Err())

	t.Run("pause hangs without refusing", func(t *testing.T) {
		in.Pause()
		conn, err := net.DialTimeout("tcp", in.Addr(), time.Second)
		require.NoError(t, err, "the kernel still accepts connections")
		defer conn.Close()
		require.NoError(t, conn.SetDeadline(time.Now().Add(300*time.Millisecond)))
		_, err = conn.Write([]byte("PING\r\n"))
		require.NoError(t, err)
		_, err = conn.Read(make([]byte, 16))
		var ne net.Error
		require.ErrorAs(t, err, &ne)
		assert.True(t, ne.Timeout(), "no answer while paused: %v", err)

		in.Resume()
		require.NoError(t, ping(in.Addr()))
		assert.Equal(t, "v", client.Get(ctx, "k").Val(), "data survives a pause")
	})

	t.Run("stop refuses connections", func(t *testing.T) {
		in.Stop()
		_, err := net.DialTimeout("tcp", in.Addr(), time.Second)
		require.ErrorIs(t, err, syscall.ECONNREFUSED)
		in.Stop() // stopping twice is harmless
	})

	t.Run("restart comes back empty on the same address", func(t *testing.T) {
		addr := in.Addr()
		in.Restart()
		assert.Equal(t, addr, in.Addr())
		require.NoError(t, ping(in.Addr()))
		err := client.Get(ctx, "k").Err()
		assert.ErrorIs(t, err, redis.Nil, "nothing is persisted across a restart")
	})

	t.Run("restart of a paused server", func(t *testing.T) {
		in.Pause()
		in.Restart()
		require.NoError(t, ping(in.Addr()))
	})
}

func TestRedisInstanceCleanupKillsPausedServer(t *testing.T) {
	var addr string
	t.Run("inner", func(t *testing.T) {
		in := Start(t)
		addr = in.Addr()
		in.Pause()
		// A paused server still completes TCP handshakes.
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		require.NoError(t, err)
		_ = conn.Close()
	})
	_, err := net.DialTimeout("tcp", addr, time.Second)
	require.ErrorIs(t, err, syscall.ECONNREFUSED, "the server is gone once its test ends")
}

func TestRedisInstancesAreIndependent(t *testing.T) {
	a, b := Start(t), Start(t)
	require.NotEqual(t, a.Addr(), b.Addr())
	a.Stop()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	client := redis.NewClient(&redis.Options{Addr: b.Addr()})
	defer client.Close()
	require.NoError(t, client.Ping(ctx).Err(), "stopping one leaves the other running")
}
