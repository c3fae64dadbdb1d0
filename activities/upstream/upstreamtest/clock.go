package upstreamtest

import "time"

// Clock is a test server's clock: it reads Base, moved by the wall time
// since Anchor times Speed (0 freezes it, 1 is real time). It is a value
// the server guards with its own lock, so a reading and what the server
// does with it stay together.
type Clock struct {
	Base, Anchor time.Time
	Speed        float64
}

// RealClock is a clock running at wall-time speed from now.
func RealClock() Clock {
	now := time.Now()
	return Clock{Base: now, Anchor: now, Speed: 1}
}

// FrozenAt is a clock that reads t until moved.
func FrozenAt(t time.Time) Clock { return Clock{Base: t, Anchor: time.Now()} }

// Now is the clock's reading.
func (c Clock) Now() time.Time {
	if c.Speed == 0 {
		return c.Base
	}
	return c.Base.Add(time.Duration(float64(time.Since(c.Anchor)) * c.Speed))
}

// Advanced is c moved forward by d, running (or frozen) as it was.
func (c Clock) Advanced(d time.Duration) Clock {
	return Clock{Base: c.Now().Add(d), Anchor: time.Now(), Speed: c.Speed}
}

// Running is c running at speed times wall time from its current reading;
// speed <= 0 freezes it.
func (c Clock) Running(speed float64) Clock {
	return Clock{Base: c.Now(), Anchor: time.Now(), Speed: max(speed, 0)}
}
